//go:build race

package main_test

// Under -race the baton binary is built with the race detector too, so the
// CLI's own goroutines are checked in the processes the tests run.
func init() { raceBuild = true }
