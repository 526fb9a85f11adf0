package bench_test

import (
	"fmt"
	"sync"
	"testing"
)

// section is one table of the report as printed.
type section struct {
	key, text string
}

// runRecord keeps what one TestRatios run printed and the figures its
// charts are drawn from, for the README generator.
type runRecord struct {
	mu       sync.Mutex
	sections []section
	// uncontended: per engine, baton's, the floor's and the peer's median
	// µs per lock+unlock (0: no such implementation).
	uncontended map[string][3]float64
	peerNames   map[string]string
}

var runRec = &runRecord{uncontended: make(map[string][3]float64), peerNames: make(map[string]string)}

// report logs a table of the report and records it under key.
func report(t *testing.T, key, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	t.Log(msg)
	runRec.mu.Lock()
	runRec.sections = append(runRec.sections, section{key: key, text: msg})
	runRec.mu.Unlock()
}

// recordUncontended keeps one engine's median µs/op for the chart; peer is
// what the peer is ("" when there is none).
func recordUncontended(engine string, baton, floor, peerUS float64, peer string) {
	runRec.mu.Lock()
	defer runRec.mu.Unlock()
	runRec.uncontended[engine] = [3]float64{baton, floor, peerUS}
	runRec.peerNames[engine] = peer
}

// recordRes records an engine's medians from interleaved results; the
// peer is the impl peerImpl, named peer.
func recordRes(engine string, res map[string]*uncontended, peerImpl, peer string) {
	us := func(impl string) float64 {
		if u := res[impl]; u != nil {
			return u.median() / 1e3
		}
		return 0
	}
	recordUncontended(engine, us("baton"), us("floor"), us(peerImpl), peer)
}
