package faultproxy

import (
	"fmt"
	"sync"
	"time"
)

// fault is the set of faults on one direction; the zero value forwards
// every byte untouched. A writer applies them to each chunk in this order:
// a blackhole drops it; a latency holds it; a reset drops it and resets
// the link; a cut lets through what is left of the allowance.
type fault struct {
	blackhole bool

	latency, jitter time.Duration

	cut      bool
	cutAfter int64
	// cutEpoch is bumped by every CutAfter and kept by Heal: a writer
	// counts its bytes from the first chunk it sees under a new epoch, so
	// each CutAfter counts afresh on every connection.
	cutEpoch uint64

	reset      bool
	resetAfter time.Duration
}

// faults holds one direction's fault set, shared by the writers of every
// link, and tells them when it changes.
type faults struct {
	mu      sync.Mutex
	f       fault
	changed chan struct{} // closed and replaced on every change
}

func newFaults() *faults {
	return &faults{changed: make(chan struct{})}
}

// load returns the current faults and a channel closed at the next change.
func (s *faults) load() (fault, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f, s.changed
}

// update applies fn to the faults and wakes every writer waiting on them.
func (s *faults) update(fn func(*fault)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.f)
	close(s.changed)
	s.changed = make(chan struct{})
}

// Blackhole silently drops every byte in dir (both when dir is ""),
// keeping connections open: a partition that neither side sees as a
// close. The end of a stream is dropped too, so a peer that gives up and
// closes its connection is not heard on the other side either. The bytes
// are gone for good: Heal closes the connections a blackhole covered, as
// a stream with a hole in it is of no use to anyone. For a partition whose
// held bytes arrive once it heals, use Latency with a duration longer than
// the partition.
func (p *Proxy) Blackhole(dir Direction) error {
	return p.set(dir, func(f *fault) { f.blackhole = true })
}

// Latency delays every chunk in dir (both when "") by d ± jitter, drawn
// per chunk and counted from when the proxy read it. Chunks keep their
// order (one drawn shorter than its predecessor's waits for it), the end
// of the stream waits behind them, and a new latency applies to chunks
// already waiting. On Heal every held chunk goes at once, in order.
func (p *Proxy) Latency(dir Direction, d, jitter time.Duration) error {
	if d < 0 || jitter < 0 {
		return fmt.Errorf("faultproxy: negative latency %v ± %v", d, jitter)
	}
	return p.set(dir, func(f *fault) { f.latency, f.jitter = d, jitter })
}

// CutAfter lets n more bytes through in dir (both when "") on each
// connection, counted from this call, and then closes the connection.
// The check is made as bytes arrive, so with n == 0 an idle connection
// stays open until the next chunk, which is dropped: CutAfter(Downstream,
// 0) right before a request loses its response while the server still
// applies it. New connections get the same allowance until Heal.
func (p *Proxy) CutAfter(dir Direction, n int64) error {
	if n < 0 {
		return fmt.Errorf("faultproxy: CutAfter(%q, %d): negative byte count", dir, n)
	}
	return p.set(dir, func(f *fault) {
		f.cut, f.cutAfter = true, n
		f.cutEpoch++
	})
}

// ResetPeer resets connections with a TCP RST on both sides: the next
// time the server sends on a connection, that data is dropped and the
// connection is reset timeout later (at once when 0). The client reads
// ECONNRESET where it expected an answer.
func (p *Proxy) ResetPeer(timeout time.Duration) error {
	if timeout < 0 {
		return fmt.Errorf("faultproxy: ResetPeer(%v): negative timeout", timeout)
	}
	return p.set(Downstream, func(f *fault) { f.reset, f.resetAfter = true, timeout })
}

// Heal removes every fault, on open connections and new ones alike. Held
// chunks go on at once; connections that were under a blackhole are
// closed (see Blackhole).
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	holed := false
	for _, s := range []*faults{p.up, p.down} {
		s.update(func(f *fault) {
			holed = holed || f.blackhole
			*f = fault{cutEpoch: f.cutEpoch}
		})
	}
	if holed {
		p.closeLinksLocked()
	}
}

// set applies fn to the faults of dir.
func (p *Proxy) set(dir Direction, fn func(*fault)) error {
	switch dir {
	case Upstream:
		p.up.update(fn)
	case Downstream:
		p.down.update(fn)
	case "":
		p.up.update(fn)
		p.down.update(fn)
	default:
		return fmt.Errorf("faultproxy: unknown direction %q", dir)
	}
	return nil
}
