//go:build race

package keeper_test

// raceEnabled: the race detector slows the Go side of every renewal batch
// several times; TestManyLeases then holds fewer leases (see there).
const raceEnabled = true
