//go:build !race

package redislock_test

const raceEnabled = false
