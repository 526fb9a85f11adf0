package scenario

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-go/baton/drill"
)

// check scans for orphans and judges the trial's history. It runs after
// close, so the history is complete; the scan uses a context of its own
// (ctx may be cancelled: leftovers are counted all the same).
func (tr *trial) check(ctx context.Context) outcome {
	out := outcome{nextGrant: -1}
	wait := 3 * tr.t.TTL
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait+10*time.Second)
	defer cancel()
	out.orphans = tr.orphans(sctx, wait)
	events := sortedEvents(tr.rec.Events())
	out.fencedStale = staleAccepted(events, tr.fenced.Name)
	out.unfencedStale = staleAccepted(events, tr.unfenced.Name)
	if out.fencedStale > 0 {
		tr.violate("I3", "the fenced resource accepted %d stale writes", out.fencedStale)
	}
	if tr.spec.control && out.unfencedStale == 0 && ctx.Err() == nil {
		tr.violate("control", "the unfenced twin accepted no stale write: the fault was not exercised, so the fenced result proves nothing")
	}
	for _, v := range drill.CheckTokens(events) {
		tr.violate(v.Invariant, "%s", v.Msg)
	}
	tr.checkCounter(events, tr.fenced)
	fault, ok := firstFault(events)
	if ok {
		if g, ok := nextGrant(events, tr.name, fault); ok {
			out.nextGrant = time.Duration(g.At - fault.T)
		}
		if tr.spec.lead {
			out.lostLead, out.hasLead = tr.lostLead(events, fault)
		}
	}
	out.timeline = timeline(events, tr.index, tr.seed, tr.fenced.Name, tr.unfenced.Name)
	out.violations = tr.violations()
	if err := tr.rec.Err(); err != nil {
		out.violations = append(out.violations, "drill: "+err.Error())
	}
	return out
}

// orphans polls the trial's name until the servers hold nothing under it
// or wait has passed, and returns how many entries are left (I8). A
// killed or frozen holder's entry goes when its session or lease
// expires, within a TTL: wait is longer than that.
func (tr *trial) orphans(ctx context.Context, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	for {
		es, err := tr.t.Scan(ctx, tr.name)
		if err == nil && len(es) == 0 {
			return 0
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err != nil {
				tr.violate("I8", "%q: orphan scan failed: %v", tr.name, err)
				return 0
			}
			tr.violate("I8", "%q: %d entries left %v after the trial: %v", tr.name, len(es), wait, es)
			return len(es)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkCounter checks I1 on the fenced counter: no acknowledged increment
// lost, no two grants' increments interleaved.
func (tr *trial) checkCounter(events []drill.Event, c *drill.Counter) {
	final, err := c.Value(context.Background())
	if err != nil {
		tr.violate("drill", "read %s: %v", c.Name, err)
		return
	}
	r := drill.CheckCounter(events, c.Name, 0, final)
	if r.Lost > 0 {
		tr.violate("I1", "%s: %s", c.Name, r)
	}
	for _, v := range r.Interleaved {
		tr.violate(v.Invariant, "%s", v.Msg)
	}
}

// sortedEvents orders a history by time: a child's events are ingested
// as they arrive, a little after events of the parent recorded later.
func sortedEvents(es []drill.Event) []drill.Event {
	slices.SortStableFunc(es, func(a, b drill.Event) int { return cmp.Compare(a.T, b.T) })
	return es
}

// staleAccepted counts the writes resource accepted from a grant older
// than one it had already served (staleWrites).
func staleAccepted(events []drill.Event, resource string) int {
	return len(staleWrites(events, resource))
}

// staleWrites returns the indexes of the accepted stale writes to
// resource: a write is stale when, before it was sent, an operation under
// a larger token had completed at the resource. On the fenced resource
// that must never happen; on its unfenced twin it is the danger the fence
// removes.
func staleWrites(events []drill.Event, resource string) []int {
	type key struct {
		client string
		id     int64
	}
	var served uint64          // the largest token of a completed operation
	seenAt := map[key]uint64{} // write invoke → served when it was sent
	var out []int
	for i, e := range events {
		if e.Name != resource || (e.Op != drill.OpRead && e.Op != drill.OpWrite) {
			continue
		}
		k := key{e.Client, e.ID}
		switch e.Phase {
		case drill.Invoke:
			if e.Op == drill.OpWrite {
				seenAt[k] = served
			}
		case drill.Ok:
			if e.Op == drill.OpWrite && e.Token < seenAt[k] {
				out = append(out, i)
			}
			served = max(served, e.Token)
		}
	}
	return out
}

// firstFault is the first fault injected in the history.
func firstFault(events []drill.Event) (drill.Event, bool) {
	for _, e := range events {
		if e.Op == drill.OpFault && e.Phase == drill.Invoke {
			return e, true
		}
	}
	return drill.Event{}, false
}

// nextGrant is the first grant of name after fault to a client other
// than the faulted one.
func nextGrant(events []drill.Event, name string, fault drill.Event) (drill.Grant, bool) {
	for _, g := range drill.Grants(events, name) {
		if g.At > fault.T && (fault.Client == "" || g.Client != fault.Client) {
			return g, true
		}
	}
	return drill.Grant{}, false
}

// lostLead is how long before the server-side expiry the faulted holder
// was told Lost. The server's expiry is taken as fault + TTL: the last
// renewal the server heard came before the fault, so the server expired
// the session or lease at the latest then. The figure is therefore an
// upper bound of the true lead, which is shorter by the time between
// that last renewal and the fault (at most a renewal interval, TTL/3 on
// the keeper's engines). A holder told Lost after that bound was told
// too late: the lead is negative. The safety that matters — told before
// anyone else was granted — is checked as a violation (I7) by the
// caller's scenario.
func (tr *trial) lostLead(events []drill.Event, fault drill.Event) (time.Duration, bool) {
	expiry := fault.T + int64(tr.t.TTL)
	for _, e := range events {
		if e.Client == fault.Client && e.Op == drill.OpState && e.Detail == "lost" && e.T > fault.T {
			return time.Duration(expiry - e.T), true
		}
	}
	return 0, false
}

// timeline draws the history of one trial for a report.
func timeline(events []drill.Event, trial int, seed uint64, fenced, unfenced string) Timeline {
	tl := Timeline{Trial: trial, Seed: seed}
	if len(events) == 0 {
		return tl
	}
	start, end := events[0].T, events[len(events)-1].T
	at := func(t int64) time.Duration { return time.Duration(t - start) }
	// Waits: an acquire's invoke to its completion.
	type key struct {
		client string
		id     int64
	}
	waits := map[key]int64{}
	for _, e := range events {
		if e.Op != drill.OpAcquire {
			continue
		}
		k := key{e.Client, e.ID}
		if e.Phase == drill.Invoke {
			waits[k] = e.T
			continue
		}
		if from, ok := waits[k]; ok {
			tl.Spans = append(tl.Spans, Span{Client: e.Client, Kind: "waited", From: at(from), To: at(e.T)})
			delete(waits, k)
		}
	}
	for k, from := range waits {
		tl.Spans = append(tl.Spans, Span{Client: k.client, Kind: "waited", From: at(from), To: at(end)})
	}
	for _, g := range drill.Grants(events, "") {
		until := g.Until
		if until == 0 {
			until = end
		}
		tl.Spans = append(tl.Spans, Span{Client: g.Client, Kind: "held", From: at(g.At), To: at(until)})
	}
	tl.Spans = append(tl.Spans, suspensions(events, at, end)...)
	tl.Marks = marks(events, at, fenced, unfenced)
	slices.SortStableFunc(tl.Spans, func(a, b Span) int { return cmp.Compare(a.From, b.From) })
	return tl
}

// suspensions are the spans in which a holder was told Suspended: from
// that state to the lease's next one.
func suspensions(events []drill.Event, at func(int64) time.Duration, end int64) []Span {
	type key struct {
		client string
		token  uint64
	}
	open := map[key]int64{}
	var out []Span
	for _, e := range events {
		if e.Op != drill.OpState {
			continue
		}
		k := key{e.Client, e.Token}
		if from, ok := open[k]; ok {
			out = append(out, Span{Client: e.Client, Kind: "suspended", From: at(from), To: at(e.T)})
			delete(open, k)
		}
		if e.Detail == "suspended" {
			open[k] = e.T
		}
	}
	for k, from := range open {
		out = append(out, Span{Client: k.client, Kind: "suspended", From: at(from), To: at(end)})
	}
	return out
}

// marks are the point events of a timeline: faults and their healing,
// Lost, and the outcome of every write to a counter.
func marks(events []drill.Event, at func(int64) time.Duration, fenced, unfenced string) []Mark {
	stale := map[*drill.Event]bool{}
	for _, res := range []string{fenced, unfenced} {
		for _, i := range staleWrites(events, res) {
			stale[&events[i]] = true
		}
	}
	var out []Mark
	for i := range events {
		e := &events[i]
		switch {
		case e.Op == drill.OpFault:
			kind, detail, _ := strings.Cut(e.Detail, ": ")
			if e.Phase != drill.Invoke {
				kind = "heal"
				if strings.HasPrefix(e.Detail, "pause") {
					kind = "resume"
				}
			}
			out = append(out, Mark{Client: e.Client, Kind: kind, At: at(e.T), Detail: detail})
		case e.Op == drill.OpState && e.Detail == "lost":
			out = append(out, Mark{Client: e.Client, Kind: "lost", At: at(e.T), Detail: fmt.Sprintf("token %d", e.Token)})
		case e.Op == drill.OpWrite && (e.Name == fenced || e.Name == unfenced) && e.Phase != drill.Invoke:
			res := "fenced"
			if e.Name == unfenced {
				res = "unfenced"
			}
			detail := fmt.Sprintf("%s, token %d", res, e.Token)
			switch {
			case stale[e]:
				out = append(out, Mark{Client: e.Client, Kind: "stale-accepted", At: at(e.T), Detail: detail})
			case e.Phase == drill.Ok:
				out = append(out, Mark{Client: e.Client, Kind: "write-ok", At: at(e.T), Detail: detail})
			case e.Phase == drill.Fail && e.Detail == drill.StaleDetail:
				out = append(out, Mark{Client: e.Client, Kind: "write-refused", At: at(e.T), Detail: detail})
			}
		case e.Op == "cancel":
			out = append(out, Mark{Client: e.Client, Kind: "cancel", At: at(e.T)})
		}
	}
	return out
}
