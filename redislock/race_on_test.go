//go:build race

package redislock_test

// raceEnabled: the race detector turns sync.Pool off, so go-redis
// allocates its buffers per command and allocation counts mean nothing.
const raceEnabled = true
