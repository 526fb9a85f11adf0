//go:build race

package sqllock

// raceEnabled: the race detector drops sync.Pool's contents at random,
// so allocation counts mean nothing.
const raceEnabled = true
