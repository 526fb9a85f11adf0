//go:build !race

package drill_test

// zkRaceBuild: see zkrace_on_test.go.
const zkRaceBuild = false
