package kubelock

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// kindOf is the entry kind of a leasekit acquire.
func kindOf(k leasekit.Kind) string {
	switch k {
	case leasekit.KindRead:
		return kindRead
	case leasekit.KindWrite:
		return kindWrite
	case leasekit.KindPermit:
		return kindPermit
	case leasekit.KindLeader:
		return kindLeader
	}
	return kindMutex
}

// attempts are one acquire's attempts. Each is one read and, when it
// grants or must record the waiter, one conditional write of the name's
// Lease (Client.modify). The owner lasts for the whole acquire: it names
// the waiting intent, and the grant that replaces it. The first attempt
// records no intent and watches nothing: an uncontended acquire leaves no
// waiter behind and starts no watch. A refused first attempt of a waiting
// acquire is followed at once by one that records the intent, after the
// watch is up.
type attempts struct {
	c      *Client
	req    *leasekit.Request
	kind   string
	owner  string
	queued bool      // an intent of owner may be on the server
	fresh  time.Time // when this acquire last wrote its intent
	// unknown: the last failed attempt sent a write whose answer never
	// came (see Forget).
	unknown bool
	// woke and prev are the wake-up channels of this attempt's watch and
	// the previous one's (see base).
	woke, prev <-chan struct{}
}

// Begin starts one acquire for package leasekit.
func (s *store) Begin(req *leasekit.Request) leasekit.Attempts {
	return &attempts{c: s.c, req: req, kind: kindOf(req.Kind), owner: engine.NewOwnerID()}
}

// Watch watches the name from the second attempt of a waiting acquire on.
func (a *attempts) Watch(n int) (<-chan struct{}, func()) {
	if !a.req.Wait || n == 0 {
		return nil, func() {}
	}
	ch, stop := a.c.hub.watch(a.req.Name, false)
	a.prev, a.woke = a.woke, ch
	return ch, stop
}

// base is the Lease to decide on without reading it: the one the watch
// delivered, when an event of it woke this acquire (the channel of the
// previous attempt's watch is closed). A wake-up by a release of this
// client, before the event came, decides on a Lease without the release:
// the event wakes the acquire again.
func (a *attempts) base() *coordv1.Lease {
	if a.prev == nil {
		return nil
	}
	select {
	case <-a.prev:
		return a.c.hub.latest(a.req.Name)
	default:
		return nil
	}
}

// ref is how the keeper renews and releases owner's entries of the name.
func (a *attempts) ref() keeper.Ref { return keeper.Ref{Key: a.req.Name, Owner: a.owner} }

// attemptRaces is how many lost races an attempt takes before it counts
// as refused: under contention, every waiter's write racing every other
// one's until the attempt timed out made waiters give up as if the
// server were gone (baton.ErrSessionLost) while it answered everyone.
const attemptRaces = 4

// outcome is what one attempt's decision did.
type outcome struct {
	granted bool
	token   uint64
	hint    time.Duration
	seen    []leasekit.Permits
	intent  time.Time // when the intent was written; zero: not written
	refresh bool      // the write refreshes an intent: optional (see trace)
}

func (a *attempts) Try(ctx context.Context, n int) (leasekit.Result, error) {
	res := leasekit.Result{Sent: time.Now(), Ref: a.ref()}
	var out outcome
	tr := trace{base: a.base()}
	err := a.c.modify(ctx, a.req.Name, attemptRaces, &tr, func(v *view, seen *seen, now time.Time) (bool, error) {
		out = outcome{}
		write := a.decide(v, seen, now, n, &out)
		tr.optional = out.refresh
		return write, nil
	})
	if a.req.Seen != nil && out.seen != nil {
		a.req.Seen(out.seen, true)
	}
	switch {
	case errors.Is(err, errRaced):
		// Refused: the server answered, and others wrote first. A grant
		// is decided again at the next attempt; a refresh that did not
		// land is made then (the intent lasts intentTTL, refreshes come
		// every third of it or so).
		out.granted, out.hint = false, 0
	case err != nil:
		// The server answered part of the attempt (a read, a lost race)
		// before it failed: the waiter is contended, not cut off. Only a
		// write whose answer never came may have taken something.
		res.Reached, a.unknown = tr.answered, tr.unknown
		return res, err
	case !out.intent.IsZero():
		a.queued, a.fresh = true, out.intent
	case out.granted:
		res.Granted, res.Token, res.Sent = true, out.token, tr.sent
		a.queued = false // the intent is the grant now
		return res, nil
	}
	res.Hint, res.Again = out.hint, a.req.Wait && n == 0
	return res, nil
}

// decide is one attempt's decision on v: grant (the grant replaces the
// caller's intent and takes the name's next token), or, for a waiting
// acquire of a read/write lock, a semaphore or an election after its
// first attempt, record or refresh the intent (a new one takes the next
// token as its ticket). It reports whether to write.
func (a *attempts) decide(v *view, seen *seen, now time.Time, n int, out *outcome) bool {
	others, ticket := a.others(v, seen, now)
	if a.kind == kindPermit {
		out.seen = permitsOf(a.req.Name, v.st.Holders, v.st.Waiters, a.owner)
	}
	if grantable(a.kind, a.req.N, others, ticket) {
		v.prune(seen, now, nil)
		v.drop(a.owner)
		ttl := a.c.o.TTL
		if a.req.Fixed > 0 {
			ttl = a.req.Fixed
		}
		out.granted, out.token = true, v.mint()
		v.st.Holders = append(v.st.Holders, a.entry(out.token, ttl, now))
		v.touched = true
		return true
	}
	out.hint = hint(others, now)
	if !a.req.Wait || n == 0 || a.kind == kindMutex {
		// A mutex's waiters keep no intent (see the package doc's
		// "Waiting"): their refreshes, three per TTL each, made the
		// holder's renewals and release lose race after race.
		return false
	}
	life := a.c.intentTTL()
	if i := find(v.st.Waiters, a.owner); i >= 0 {
		if now.Sub(a.fresh) < life/3 {
			return false // fresh enough: no write, a read only
		}
		v.st.Waiters[i].Stamp++
		// Optional while the intent has time left: a refresh that loses a
		// race is made at the next attempt. Past half its life it must
		// land, or the others would soon judge it expired and drop it.
		out.refresh = now.Sub(a.fresh) < life/2
	} else {
		v.st.Waiters = append(v.st.Waiters, a.entry(v.mint(), life, now))
	}
	v.prune(seen, now, map[string]bool{a.owner: true})
	out.intent = now
	return true
}

// intentTTL is how long a waiter's intent lasts without a refresh: two
// lease times. Every refresh is a write of the name's one Lease, which the
// holders' renewals must race; with a third of a TTL between refreshes,
// nine semaphore waiters on a loaded host (each read and conditional
// write taking a few hundred ms) made their holders lose race after race
// until the leases ran out. Twice the life halves those writes; the price
// is that a waiter that died keeps its place up to two TTLs, not one.
func (c *Client) intentTTL() time.Duration { return 2 * c.o.TTL }

// entry is the caller's entry: a holder's with its token, or a waiter's
// with its ticket.
func (a *attempts) entry(token uint64, ttl time.Duration, now time.Time) entry {
	e := entry{Owner: a.owner, Kind: a.kind, Token: token, Stamp: 1, TTL: ttl.Milliseconds(),
		Proc: a.c.proc, Since: now.UnixMilli()}
	switch a.kind {
	case kindLeader:
		e.ID = a.req.ID
	case kindPermit:
		e.N = a.req.N
	}
	return e
}

// other is a live holder or waiter of the name other than the caller, as
// the grant rules see it; a foreign holder is an exclusive holder.
type other struct {
	kind    string
	waiting bool
	ticket  uint64
	until   time.Time // when it expires as this client judges it
}

// others lists the live entries of the name but the caller's, and the
// caller's ticket (0 while it has no intent).
func (a *attempts) others(v *view, seen *seen, now time.Time) ([]other, uint64) {
	var (
		out    []other
		ticket uint64
	)
	if id := v.foreign(); id != "" {
		if until := seen.specExpiry(v.obj, now); now.Before(until) {
			out = append(out, other{kind: "foreign", until: until})
		}
	}
	for _, list := range []struct {
		es      []entry
		waiting bool
	}{{v.st.Holders, false}, {v.st.Waiters, true}} {
		for i := range list.es {
			e := &list.es[i]
			if e.Owner == a.owner {
				if list.waiting {
					ticket = e.Token
				}
				continue
			}
			if until := seen.expiry(e, now); now.Before(until) {
				out = append(out, other{kind: e.Kind, waiting: list.waiting, ticket: e.Token, until: until})
			}
		}
	}
	return out, ticket
}

// grantable decides a grant of kind from the others and the caller's
// ticket, as sqllock's recipes do: waiters are served in ticket order, a
// caller without a ticket yet yields to every waiter, and an entry of an
// unexpected kind (another recipe on the same name, a foreign holder)
// counts as exclusive rather than being overlooked.
//
//   - A reader is granted while every holder is a reader and no writer
//     waits ahead of it.
//   - A permit is granted while the holders and the waiters ahead number
//     fewer than N.
//   - An exclusive holder (mutex, writer, leader) is granted when nobody
//     holds and no waiter waits ahead of it.
func grantable(kind string, n int, others []other, ticket uint64) bool {
	ahead := func(o other) bool { return ticket == 0 || o.ticket < ticket }
	switch kind {
	case kindRead:
		for _, o := range others {
			switch {
			case !o.waiting && o.kind != kindRead:
				return false
			case o.waiting && o.kind != kindRead && ahead(o):
				return false
			}
		}
		return true
	case kindPermit:
		taken := 0
		for _, o := range others {
			if !o.waiting || o.kind != kindPermit || ahead(o) {
				taken++
			}
		}
		return taken < n
	}
	for _, o := range others {
		if !o.waiting || ahead(o) {
			return false
		}
	}
	return true
}

// hint is how soon the first entry among others expires, as this client
// judges it: a waiter tries again then, if nothing wakes it sooner. A
// dead holder's expiry, or a dead waiter's ahead of the caller, is no
// event that a watch could report.
func hint(others []other, now time.Time) time.Duration {
	var first time.Time
	for _, o := range others {
		if first.IsZero() || o.until.Before(first) {
			first = o.until
		}
	}
	if first.IsZero() {
		return 0
	}
	return max(first.Sub(now), time.Millisecond)
}

// permitsOf lists the N stored by the permit holders and waiters but
// owner's, for the semaphore's disagreement check.
func permitsOf(name string, holders, waiters []entry, owner string) []leasekit.Permits {
	ps := []leasekit.Permits{}
	for _, list := range [][]entry{holders, waiters} {
		for _, e := range list {
			if e.Kind == kindPermit && e.Owner != owner {
				ps = append(ps, leasekit.Permits{ID: e.Owner, Lease: name + "/" + e.Owner, N: e.N})
			}
		}
	}
	return ps
}

// Forget frees, owner-checked and in the background, what a failed
// attempt may have written (a grant, an intent), and goes on under a new
// owner: a late write of the failed attempt must not be taken for a later
// one. An attempt that wrote nothing, or whose every write was answered,
// took nothing: the waiter keeps its owner and its place in the queue
// (under load, a read that timed out cost waiters their place, and the
// releases of their intents loaded the server further).
func (a *attempts) Forget(res leasekit.Result) {
	if !a.unknown && !res.Granted {
		return
	}
	if res.Ref.Owner != "" {
		a.c.k.Abandon(res.Ref)
	}
	a.owner, a.queued, a.fresh, a.unknown = engine.NewOwnerID(), false, time.Time{}, false
}

// End drops the intent of an acquire that gave up, in the background
// (the caller's context may be over): it expires by itself after a TTL
// anyway, but until then it holds back the waiters behind it.
func (a *attempts) End(_ context.Context, granted bool) {
	if !granted && a.queued {
		a.c.k.Abandon(a.ref())
	}
}

// Leader reads the leadership of name: a baton leader (Session: the
// grant's owner, ID: the candidate ID), or a holder that is not baton's
// (a client-go LeaderElector: Session and ID its holderIdentity); an
// error wrapping baton.ErrNoLeader when nobody leads or the leader's
// lease ran out as this client judges it.
func (s *store) Leader(ctx context.Context, name string) (baton.Candidate, error) {
	var cand baton.Candidate
	err := s.c.modify(ctx, name, 0, nil, func(v *view, seen *seen, now time.Time) (bool, error) {
		cand = baton.Candidate{}
		if id := v.foreign(); id != "" && now.Before(seen.specExpiry(v.obj, now)) {
			cand = baton.Candidate{Session: id, ID: id}
		}
		for i := range v.st.Holders {
			h := &v.st.Holders[i]
			if h.Kind == kindLeader && now.Before(seen.expiry(h, now)) {
				cand = baton.Candidate{Session: h.Owner, ID: h.ID}
			}
		}
		return false, nil
	})
	if err != nil {
		return baton.Candidate{}, fmt.Errorf("kubelock: leader of %q: %w", name, err)
	}
	if cand.Session == "" {
		return baton.Candidate{}, fmt.Errorf("kubelock: election %q: %w", name, baton.ErrNoLeader)
	}
	return cand, nil
}
