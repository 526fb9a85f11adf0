package bench_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// memCount is the process's heap allocations so far: objects (mallocs)
// and bytes, from runtime.MemStats.
type memCount struct{ mallocs, bytes uint64 }

// readMem reads the allocation counters. ReadMemStats stops the world for
// a moment, so it is read once before and once after a whole measured run,
// never per operation: the timing around it stays as it was.
func readMem() memCount {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memCount{mallocs: ms.Mallocs, bytes: ms.TotalAlloc}
}

// perOp is the allocations from m0 to m spread over n operations: the
// whole process's, so the clients' background work (pings, keepalives,
// renewals) is in it. NaN when there was no operation.
func (m memCount) perOp(m0 memCount, n int) (allocs, bytes float64) {
	if n <= 0 {
		return math.NaN(), math.NaN()
	}
	return float64(m.mallocs-m0.mallocs) / float64(n), float64(m.bytes-m0.bytes) / float64(n)
}

// medianOf is the middle value of s (the upper one of an even count).
func medianOf(s []float64) float64 {
	c := slices.Clone(s)
	slices.Sort(c)
	return c[len(c)/2]
}

// fmtAllocs formats allocations per operation, "n/a" when not measured.
func fmtAllocs(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", v)
}

// allocsOf formats the impls' median allocs/op joined by "·", "–" for an
// impl that was not measured, like flights does for requests.
func allocsOf(res map[string]*uncontended, impls ...string) string {
	parts := make([]string, 0, len(impls))
	for _, impl := range impls {
		if u := res[impl]; u != nil {
			parts = append(parts, fmtAllocs(u.medianAllocs()))
		} else {
			parts = append(parts, "–")
		}
	}
	return strings.Join(parts, "·")
}

// allocSink keeps what the test pairs allocate on the heap.
var allocSink any

// TestInterleavedAllocs checks the allocs/op the reports print on pairs
// whose allocations are known exactly: one that allocates one 64-byte
// object per lock+unlock and one that allocates three. Each impl must get
// its own figure (the rounds rotate the order), and the figure must be the
// pair's own allocations, give or take the process's background.
func TestInterleavedAllocs(t *testing.T) {
	setBenchtime(t, "20000x")
	nop := func(context.Context) error { return nil }
	one := &pair{impl: "one", what: "one object", unlock: nop, lock: func(context.Context) error {
		allocSink = new([64]byte)
		return nil
	}}
	three := &pair{impl: "three", what: "three objects", unlock: nop, lock: func(context.Context) error {
		for range 3 {
			allocSink = new([64]byte)
		}
		return nil
	}}
	res := interleaved(t, "allocs", []*pair{one, three}, 2)
	for impl, want := range map[string]float64{"one": 1, "three": 3} {
		u := res[impl]
		if len(u.allocs) != 2 || len(u.bytes) != 2 {
			t.Fatalf("%s: %d allocs and %d bytes figures over 2 rounds, want 2 each", impl, len(u.allocs), len(u.bytes))
		}
		if a := u.medianAllocs(); a < want || a >= want+0.5 {
			t.Errorf("%s: %.3f allocs/op, want %v (+ < 0.5 of background)", impl, a, want)
		}
		if b := u.medianBytes(); b < 64*want {
			t.Errorf("%s: %.1f B/op, want ≥ %v", impl, b, 64*want)
		}
	}
	if got := allocsOf(res, "one", "three", "none"); got != "1·3·–" {
		t.Errorf("allocsOf = %q, want %q", got, "1·3·–")
	}
}

// TestInterleavedCPU checks the CPU figures beside the allocations: a pair
// that burns at least 100 µs of the process's CPU per lock+unlock must
// show at least that, and a pair whose server reading grows by exactly
// 50 µs per lock must show exactly 50 µs of server CPU; a pair without a
// server reading shows none.
func TestInterleavedCPU(t *testing.T) {
	setBenchtime(t, "500x")
	nop := func(context.Context) error { return nil }
	burn := &pair{impl: "burn", what: "100 µs of CPU", unlock: nop, lock: func(context.Context) error {
		for c0 := processCPU(); processCPU()-c0 < 100*time.Microsecond; {
		}
		return nil
	}}
	var served time.Duration
	srv := &pair{impl: "srv", what: "50 µs of server CPU",
		lock:   func(context.Context) error { served += 50 * time.Microsecond; return nil },
		unlock: nop,
		server: func(context.Context) (time.Duration, error) { return served, nil },
	}
	res := interleaved(t, "cpu", []*pair{burn, srv}, 2)
	if u := res["burn"]; len(u.cpu) != 2 || len(u.srv) != 0 {
		t.Fatalf("burn: %d CPU and %d server figures over 2 rounds, want 2 and 0", len(u.cpu), len(u.srv))
	} else if c := time.Duration(medianOf(u.cpu)); c < 100*time.Microsecond || c > 20*time.Millisecond {
		t.Errorf("burn: client CPU %v/op, want ≥ 100µs (and < 20ms)", c)
	}
	if u := res["srv"]; len(u.srv) != 2 {
		t.Fatalf("srv: %d server figures over 2 rounds, want 2", len(u.srv))
	} else if s := time.Duration(medianOf(u.srv)); s != 50*time.Microsecond {
		t.Errorf("srv: server CPU %v/op, want 50µs", s)
	}
}

// setBenchtime sets -test.benchtime for the test (testing.Benchmark reads
// it) and puts it back at its end.
func setBenchtime(t *testing.T, v string) {
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return
	}
	old := f.Value.String()
	if err := f.Value.Set(v); err != nil {
		t.Fatalf("set benchtime %q: %v", v, err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}
