package bench_test

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// curves is the cost curves of one run.
type curves struct {
	sizes     curveSizes
	handoff   map[string][]handoffPoint
	tput      map[string][]tputPoint
	tputFloor map[string]tputPoint
	tputPeer  map[string]peerPoint // the peer libraries over the most names
	held      map[string]heldPoint
}

// curveReport draws the cost curves and prints them with their targets:
// requests per handoff flat (≤ 1.1× from the fewest to the most waiters),
// p50 at the most waiters ≤ 1.5× at the fewest, goroutines independent of
// the leases held, throughput over the most names ≥ 0.9× the floor's.
func curveReport(t *testing.T, s curveSizes) (c curves, misses []string) {
	c.sizes = s
	var err error
	if c.handoff, err = handoffCurve(t, s); err != nil {
		t.Fatal(err)
	}
	c.tput, c.tputFloor, c.tputPeer = throughputCurve(t, s)
	c.held = heldRow(t, s)
	if t.Failed() {
		return c, nil
	}
	misses = append(misses, handoffTable(t, c, s)...)
	misses = append(misses, tputTable(t, c, s)...)
	misses = append(misses, heldTable(t, c, s)...)
	return c, misses
}

// handoffTable reports the handoff curve with its targets and returns the
// missed ones.
func handoffTable(t *testing.T, c curves, s curveSizes) (misses []string) {
	var handoffFailures []string
	var tw strings.Builder
	w := tabwriter.NewWriter(&tw, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "engine\t"
	for _, n := range s.waiters {
		head += fmt.Sprintf("p50/p99 µs @%d\t", n)
	}
	for _, n := range s.waiters {
		head += fmt.Sprintf("req @%d\t", n)
	}
	for _, n := range s.waiters {
		head += fmt.Sprintf("allocs @%d\t", n)
	}
	fmt.Fprintln(w, head+"p50 ratio\treq ratio\ttarget\tresult\t")
	for _, e := range append([]string{"etcd-peer"}, curveEngines...) {
		pts := c.handoff[e]
		if len(pts) == 0 { // filtered out by -run
			continue
		}
		var ok []handoffPoint
		var failed []string
		for _, p := range pts {
			if p.failed != nil {
				failed = append(failed, fmt.Sprintf("%d waiters: %v", p.waiters, p.failed))
			} else {
				ok = append(ok, p)
			}
		}
		line := e + "\t" + pointCells(pts, "failed", func(p handoffPoint) string {
			return fmt.Sprintf("%d/%d", p.p50.Microseconds(), p.p99.Microseconds())
		}) + pointCells(pts, "–", func(p handoffPoint) string { return fmtReq(p.req) }) +
			pointCells(pts, "–", func(p handoffPoint) string { return fmtAllocs(p.allocs) })
		if len(failed) > 0 {
			misses = append(misses, fmt.Sprintf("%s handoff curve: failed at %s", e, strings.Join(failed, "; ")))
			handoffFailures = append(handoffFailures, fmt.Sprintf("%s at %s", e, strings.Join(failed, "; ")))
		}
		if len(ok) == 0 {
			fmt.Fprintf(w, "%s–\t–\t≤1.5× p50, ≤1.1× req\tMISS\t\n", line)
			continue
		}
		first, last := ok[0], ok[len(ok)-1]
		lr := float64(last.p50) / float64(first.p50)
		rr := last.req / first.req
		verdict := "PASS"
		switch {
		case e == "etcd-peer":
			verdict = "reference"
		case len(failed) > 0:
			verdict = "MISS"
		case lr > 1.5 || rr > 1.1 || math.IsNaN(rr) && lr > 1.5:
			verdict = "MISS"
			misses = append(misses, fmt.Sprintf("%s handoff curve (p50 %.2f×, requests %s× from %d to %d waiters)", e, lr, fmtReq(rr), first.waiters, last.waiters))
		}
		fmt.Fprintf(w, "%s%.2f\t%s\t≤1.5× p50, ≤1.1× req\t%s\t\n", line, lr, fmtReq(rr), verdict)
	}
	w.Flush()
	var failNote string
	if len(handoffFailures) > 0 {
		failNote = "\nfailed (a Lock or Release returned an error under the load: the points are left out of the curve and the chart): " + strings.Join(handoffFailures, "\n")
	}
	report(t, "curve-handoff", "%s", fmt.Sprintf("handoff cost curve: p50/p99 from Release start to the next waiter's Lock return, requests per handoff (exact, client-side: ZooKeeper request frames without pings, etcd calls without keepalives, request flights through a counting proxy for Redis, Redlock (without pub/sub health-check PINGs), PostgreSQL and MariaDB; SQLite has no wire; the waiters' traffic at rest is in the second table) and allocs per handoff (the whole process's heap allocations over the handoffs: holder, waiters and re-queue), every waiter on a client of its own (SQL: spread over %d clients of 4 connections each); lease engines grant any waiter, queue engines the next in line; up to 500 handoffs or %v per point; ratios: most waiters drawn over fewest:\n%s", sqlClients, s.handoff, tw.String())+failNote+"\n"+restTable(c, s))
	return misses
}

// tputTable reports the throughput curve with its target and returns the
// missed ones.
func tputTable(t *testing.T, c curves, s curveSizes) (misses []string) {
	var tw strings.Builder
	w := tabwriter.NewWriter(&tw, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "engine\t"
	for _, n := range s.names {
		head += fmt.Sprintf("ops/s @%d names\t", n)
	}
	mostNames := s.names[len(s.names)-1]
	fmt.Fprintln(w, head+fmt.Sprintf("floor ops/s\tmost names/floor\tpeer ops/s @%d names\tpeer/floor\tallocs/op @%d names\tfloor allocs/op\thost CPU µs/op @%d names·floor\tfloor/most CPU\thost busy @%d names·floor\tpeer host CPU µs/op\ttarget\tresult\t", mostNames, mostNames, mostNames, mostNames))
	var peerNotes []string
	for _, e := range curveEngines {
		if len(c.tput[e]) == 0 {
			continue
		}
		line := e + "\t"
		for _, p := range c.tput[e] {
			line += fmt.Sprintf("%.0f\t", p.ops)
		}
		pts := c.tput[e]
		most, floor := pts[len(pts)-1], c.tputFloor[e]
		r := most.ops / floor.ops
		verdict := "PASS"
		if r < 0.9 {
			verdict = "MISS"
			misses = append(misses, fmt.Sprintf("%s throughput over %d names (%.2f× the floor)", e, pts[len(pts)-1].names, r))
		}
		peerOps, peerRatio, peerCPU := "–", "–", "–"
		if p, ok := c.tputPeer[e]; ok {
			peerOps, peerRatio = fmt.Sprintf("%.0f", p.ops), fmt.Sprintf("%.2f", p.ops/floor.ops)
			if p.cpuOK {
				peerCPU = fmt.Sprintf("%.0f", p.cpu)
			}
			peerNotes = append(peerNotes, fmt.Sprintf("%s: %s", e, p.what))
		}
		fmt.Fprintf(w, "%s%.0f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t≥0.9×floor\t%s\t\n", line, floor.ops, r, peerOps, peerRatio, fmtAllocs(most.allocs), fmtAllocs(floor.allocs), cpuCols(most, floor), peerCPU, verdict)
	}
	w.Flush()
	if len(peerNotes) > 0 {
		tw.WriteString("peers, on the same number of clients over as many names of their own: " + strings.Join(peerNotes, "; ") + "\n")
	}
	report(t, "curve-throughput", "throughput: lock+unlock per second of %d clients together (direct connections, a client each), each op on a name picked at random among n; the floor: the engine's bare round trips on the same number of clients, each on a name of its own; allocs/op: the whole process's heap allocations per lock+unlock over the same run (a client's first use of a name included: each client keeps the lock of every name it used, across the rounds); host CPU: the busy CPU time of the whole host (clients and servers; /proc/stat) per lock+unlock, and its busy share of all %d cores: a point with the host near 100%% busy is bound by its CPU per op, and its throughput over the floor's is then about the floor's CPU per op over its own (floor/most CPU); %v per point of fewer names; the most names, the floor and the peer run in %d interleaved rounds of %v each, in a rotating order, and each figure is the median of its rounds':\n%s", s.clients, runtime.NumCPU(), s.tput, s.rounds, s.round, tw.String())
	return misses
}

// heldTable reports the held leases with their target and returns the
// missed ones.
func heldTable(t *testing.T, c curves, s curveSizes) (misses []string) {
	var tw strings.Builder
	w := tabwriter.NewWriter(&tw, 0, 0, 2, ' ', tabwriter.AlignRight)
	var heldFailures []string
	fmt.Fprintln(w, "engine\tleases\tgoroutines (1 lease)\tgoroutines (all)\theap B/lease\treq/s at rest\tacquire all\trelease all\tallocs/lease acq·rel\ttarget\tresult\t")
	for _, e := range curveEngines {
		h, ok := c.held[e]
		if !ok {
			continue
		}
		verdict := "PASS"
		if h.failed != nil {
			msg := h.failed.Error()
			if i := strings.IndexByte(msg, '\n'); i > 0 {
				msg = msg[:i] + " …"
			}
			fmt.Fprintf(w, "%s\t%d\tfailed\t–\t–\t–\t–\t–\t–\tgoroutines independent of leases\tMISS\t\n", e, h.leases)
			heldFailures = append(heldFailures, fmt.Sprintf("%s: %s", e, msg))
			misses = append(misses, fmt.Sprintf("%s %d held leases failed: %s", e, h.leases, msg))
			continue
		}
		if h.gN != h.g1 {
			verdict = "MISS"
			misses = append(misses, fmt.Sprintf("%s %d held leases (goroutines %d, %d with one)", e, h.leases, h.gN, h.g1))
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.0f\t%s\t%v\t%v\t%s·%s\tgoroutines independent of leases\t%s\t\n", e, h.leases, h.g1, h.gN, h.heapPerLease,
			fmtReq(h.restPerSec), h.acquire.Round(time.Millisecond), h.release.Round(time.Millisecond),
			fmtAllocs(h.acquireAllocs), fmtAllocs(h.releaseAllocs), verdict)
	}
	w.Flush()
	if len(heldFailures) > 0 {
		tw.WriteString("failed (a lease lost or an operation failed under the load): " + strings.Join(heldFailures, "\n"))
	}
	report(t, "curve-held", "held leases on one client (lease time / session timeout %v): goroutines the client added, live heap per lease, requests per second at rest over %v (pings, keepalives and renewals included), acquiring and releasing all on 32 goroutines, with the process's heap allocations per lease over each:\n%s", heldTTL, s.rest, tw.String())
	return misses
}

// restTable is the handoff curve's second table: the waiters' requests
// per second at rest after each point's handoffs, and at the most
// waiters the time between one waiter's requests.
func restTable(c curves, s curveSizes) string {
	var tw strings.Builder
	w := tabwriter.NewWriter(&tw, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "engine\t"
	for _, n := range s.waiters {
		head += fmt.Sprintf("rest req/s @%d\t", n)
	}
	fmt.Fprintln(w, head+fmt.Sprintf("s between a waiter's requests @%d\t", s.waiters[len(s.waiters)-1]))
	for _, e := range append([]string{"etcd-peer"}, curveEngines...) {
		pts := c.handoff[e]
		if len(pts) == 0 {
			continue
		}
		line, every := e+"\t"+pointCells(pts, "–", func(p handoffPoint) string { return fmtReq(p.rest) }), "–"
		if last := pts[len(pts)-1]; last.failed == nil && last.rest > 0 {
			every = fmt.Sprintf("%.1f", float64(last.waiters)/last.rest)
		}
		fmt.Fprintln(w, line+every+"\t")
	}
	w.Flush()
	return fmt.Sprintf("requests at rest: after each point's handoffs, a window of the same length (%v), the holder holding and every waiter waiting, counts what the waiters send with no handoff at all. ZooKeeper's pings and etcd's keepalives are not counted; Redis, Redlock and SQL waiters poll as a safety net and keep their intents alive, each at least once per TTL/2 (TTL %v here; a Redlock waiter's poll is a request to every node): traffic that grows with the waiters, not with the handoffs, and that the requests per handoff above include when it falls into the handoff window (polls start TTL/4 to TTL/2 after a waiter's first attempt, so it grows over a point's first seconds):\n%s", s.handoff, benchRedisTTL, tw.String())
}

// pointCells is one tab-terminated cell per handoff point: cell of the
// point, or failed for a point whose operations failed.
func pointCells(pts []handoffPoint, failed string, cell func(handoffPoint) string) string {
	var b strings.Builder
	for _, p := range pts {
		if p.failed != nil {
			b.WriteString(failed + "\t")
		} else {
			b.WriteString(cell(p) + "\t")
		}
	}
	return b.String()
}

// cpuCols formats the host CPU columns of a throughput row: µs per op at
// the most names and of the floor, the floor's over the row's, and the
// host's busy share in each; dashes where the host's CPU was not read.
func cpuCols(most, floor tputPoint) string {
	if !most.cpuOK || !floor.cpuOK {
		return "–\t–\t–"
	}
	return fmt.Sprintf("%.0f·%.0f\t%.2f\t%.0f%%·%.0f%%", most.cpu, floor.cpu, floor.cpu/most.cpu, 100*most.busy, 100*floor.busy)
}

func fmtReq(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}
