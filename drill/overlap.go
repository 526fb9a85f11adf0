package drill

import (
	"fmt"
	"sort"
)

// Increment is one read-modify-write on a counter resource: a read that
// returned Read, then a write of Read+1, by one client under one grant.
type Increment struct {
	Client   string
	Token    uint64
	Owner    string
	Read     int64
	ReadOk   int64 // T the read returned
	WriteInv int64 // T the write was sent
	WriteOk  int64 // T the write returned accepted; 0 if not accepted
}

// Increments pairs each accepted read on resource with the same client's
// next write under the same token.
func Increments(events []Event, resource string) []Increment {
	type key struct {
		client string
		id     int64
	}
	inv := map[key]Event{}
	pending := map[string]*Increment{} // client → read awaiting its write
	var out []Increment
	for _, e := range events {
		if e.Name != resource {
			continue
		}
		k := key{e.Client, e.ID}
		switch {
		case e.Op == OpRead && e.Phase == Ok && e.Value != nil:
			pending[e.Client] = &Increment{Client: e.Client, Token: e.Token, Owner: e.Entry, Read: *e.Value, ReadOk: e.T}
		case e.Op == OpWrite && e.Phase == Invoke:
			inv[k] = e
			if p := pending[e.Client]; p != nil && p.Token == e.Token {
				p.WriteInv = e.T
			}
		case e.Op == OpWrite && e.Phase != Invoke:
			p := pending[e.Client]
			i, ok := inv[k]
			if p == nil || !ok || p.Token != i.Token {
				continue
			}
			if e.Phase == Ok {
				p.WriteOk = e.T
			}
			out = append(out, *p)
			delete(pending, e.Client)
		}
	}
	return out
}

// CounterReport is the outcome of CheckCounter.
type CounterReport struct {
	Accepted int   // writes acknowledged as accepted
	Growth   int64 // final − initial value
	// Lost counts acknowledged increments missing from the final value:
	// the updates an unfenced resource loses to a stale holder.
	Lost int
	// Interleaved lists pairs of accepted increments of different grants
	// whose reads both returned before either write was sent: I1 broken at
	// the resource, a lost update for certain.
	Interleaved []Violation
}

// OK reports whether the resource kept mutual exclusion (I1) and lost no
// acknowledged update.
func (r CounterReport) OK() bool { return r.Lost == 0 && len(r.Interleaved) == 0 }

func (r CounterReport) String() string {
	return fmt.Sprintf("%d accepted increments, counter grew by %d, %d lost, %d interleaved pairs", r.Accepted, r.Growth, r.Lost, len(r.Interleaved))
}

// CheckCounter checks I1 at a counter resource from its history and its
// value before (initial) and after (final) the drill: every accepted
// increment must show in the final value, and no two accepted increments
// of different grants may interleave. It is a pure function.
func CheckCounter(events []Event, resource string, initial, final int64) CounterReport {
	incs := Increments(events, resource)
	var acc []Increment
	for _, in := range incs {
		if in.WriteOk != 0 {
			acc = append(acc, in)
		}
	}
	r := CounterReport{Accepted: len(acc), Growth: final - initial}
	if lost := int64(len(acc)) - r.Growth; lost > 0 {
		r.Lost = int(lost)
	}
	sort.Slice(acc, func(i, j int) bool { return acc[i].ReadOk < acc[j].ReadOk })
	for i, x := range acc {
		for _, y := range acc[i+1:] {
			if y.ReadOk > x.WriteInv {
				break // sorted by ReadOk: no later y read before x wrote
			}
			if x.Token == y.Token && x.Owner == y.Owner {
				continue
			}
			if x.ReadOk < y.WriteInv && y.ReadOk < x.WriteInv {
				r.Interleaved = append(r.Interleaved, Violation{"I1", fmt.Sprintf(
					"%q: %s (token %d) and %s (token %d) both read %d/%d before either wrote; both writes accepted",
					resource, x.Client, x.Token, y.Client, y.Token, x.Read, y.Read)})
			}
		}
	}
	return r
}
