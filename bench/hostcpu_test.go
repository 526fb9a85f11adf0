package bench_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostCPU is the host's CPU time so far, from the first line of
// /proc/stat: busy (user, nice, system, irq, softirq, steal) and all
// (busy, idle and iowait) in clock ticks, read with the wall clock.
//
// The throughput points read it around each run: with the clients and
// the servers on one host, a point that keeps every core busy is bound by
// the CPU its operations cost, clients and servers together, and its
// operations per second are the cores over that cost. Then the ratio of
// two points' throughput is the inverse ratio of their CPU per operation,
// which says where the time goes when a point misses its target. Every
// process on the host counts, other test runs included.
type hostCPU struct {
	busy, all uint64
	at        time.Time
	ok        bool // /proc/stat was read (Linux)
}

// readHostCPU reads /proc/stat; ok is false where there is none.
func readHostCPU() hostCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return hostCPU{at: time.Now()}
	}
	h, err := parseHostCPU(b)
	if err != nil {
		return hostCPU{at: time.Now()}
	}
	h.at = time.Now()
	return h
}

// parseHostCPU reads the "cpu" line of a /proc/stat text.
func parseHostCPU(b []byte) (hostCPU, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var v [8]uint64 // user nice system idle iowait irq softirq steal
		for i := range v {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return hostCPU{}, fmt.Errorf("/proc/stat cpu field %d %q: %w", i+1, f[i+1], err)
			}
			v[i] = n
		}
		busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
		return hostCPU{busy: busy, all: busy + v[3] + v[4], ok: true}, nil
	}
	return hostCPU{}, fmt.Errorf("/proc/stat: no cpu line")
}

// since is the host's busy share of all its cores from h0 to h (0…1) and
// the busy CPU time over that span in seconds, spread over n operations
// as µs per op; ok is false when either reading failed or nothing passed.
func (h hostCPU) since(h0 hostCPU, n int) (busy, usPerOp float64, ok bool) {
	if !h.ok || !h0.ok || h.all <= h0.all || n <= 0 {
		return 0, 0, false
	}
	busy = float64(h.busy-h0.busy) / float64(h.all-h0.all)
	cpuSeconds := busy * h.at.Sub(h0.at).Seconds() * float64(runtime.NumCPU())
	return busy, cpuSeconds * 1e6 / float64(n), true
}

// TestHostCPU checks the /proc/stat arithmetic on a made-up reading, and
// that this host's reading moves while a core spins.
func TestHostCPU(t *testing.T) {
	const sample = "cpu  100 10 50 800 40 5 5 0 0 0\ncpu0 50 5 25 400 20 2 3 0 0 0\nintr 1 2 3\n"
	h0, err := parseHostCPU([]byte(sample))
	if err != nil {
		t.Fatalf("parseHostCPU = %v", err)
	}
	if h0.busy != 170 || h0.all != 1010 {
		t.Errorf("parseHostCPU = busy %d all %d, want 170 and 1010", h0.busy, h0.all)
	}
	h1 := hostCPU{busy: h0.busy + 300, all: h0.all + 400, ok: true}
	h0.at = time.Unix(100, 0)
	h1.at = h0.at.Add(2 * time.Second)
	busy, us, ok := h1.since(h0, 1000)
	want := 0.75 * 2 * float64(runtime.NumCPU()) * 1e6 / 1000
	if !ok || busy != 0.75 || us != want {
		t.Errorf("since = %v, %v µs/op, %v; want 0.75, %v, true", busy, us, ok, want)
	}
	if _, err := parseHostCPU([]byte("cpu  1 2 x 4 5 6 7 8\n")); err == nil {
		t.Errorf("parseHostCPU(bad field) = nil error")
	}
	if runtime.GOOS != "linux" {
		return
	}
	a := readHostCPU()
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
	}
	b := readHostCPU()
	if busy, us, ok := b.since(a, 1); !ok || busy <= 0 || us <= 0 {
		t.Errorf("a 200 ms spin: busy %v, %v µs, ok %v; want the host busy", busy, us, ok)
	}
}
