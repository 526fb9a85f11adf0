package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/inspect"
)

// snapshot is one poll of every lock the exporter watches: what /metrics,
// /api/locks and the page's events show until the next poll.
type snapshot struct {
	Backend string    `json:"backend"` // redacted: no password
	Engine  string    `json:"engine"`
	Time    time.Time `json:"time"`
	// Up reports that every read of this poll worked.
	Up    bool       `json:"up"`
	Error string     `json:"error,omitempty"`
	Locks []pageLock `json:"locks"`
}

// pageLock is one lock of a snapshot, as `baton inspect --json` shows
// it: holders, waiters in serving order, what takes no part, the
// engine's notes; each entry with who holds or waits (host, pid,
// program, labels) and how long the exporter has seen it.
type pageLock struct {
	Name    string      `json:"name"`
	Permits int         `json:"permits,omitempty"`
	Holders []pageEntry `json:"holders"`
	Waiters []pageEntry `json:"waiters"`
	Other   []pageEntry `json:"other,omitempty"`
	Notes   []string    `json:"notes,omitempty"`
	// TokenBound is set where the holders' tokens are unknown from
	// outside but bounded (ZooKeeper): no grant so far has a larger one.
	TokenBound *uint64 `json:"token_bound,omitempty"`
	// Error is why the last read of this lock failed ("" when it worked).
	Error string `json:"error,omitempty"`
}

// pageEntry is an entry of inspect's JSON with Expired (see expired: it
// is shown, not counted) and SeenMS, how long this exporter has seen it
// (the same role, owner, mode and token): a lower bound of its age on
// the engines that keep no creation time.
type pageEntry struct {
	inspect.EntryJSON
	Expired bool  `json:"expired,omitempty"`
	SeenMS  int64 `json:"seen_ms"`
}

// poller reads the backend every interval in one goroutine, however many
// scrapes and pages there are, and publishes each snapshot to the page's
// event streams.
type poller struct {
	backend, engine string // shown: the URL redacted
	view            viewFunc
	// queue is set on the engines whose dead entries stay until clean
	// removes them (expired).
	queue bool
	// holderLabels exports baton_lock_holder_info (--holder-labels).
	holderLabels bool
	// list expands a prefix; nil when the engine cannot list.
	list  backend.Lister
	names []string // NAMEs, and PREFIXes ending in prefixSuffix
	// timeout bounds one poll (--connect-timeout).
	timeout time.Duration
	// scrub removes secrets from the messages shown.
	scrub  func(string) string
	now    func() time.Time
	failed func() // counts a failed poll

	mu       sync.Mutex
	last     snapshot
	lastJSON []byte
	seen     map[string]time.Time // entry key → first seen
	subs     map[chan []byte]struct{}
}

// poll reads every lock once and stores the snapshot. It returns the
// first error, unscrubbed, for the exit code at start.
func (p *poller) poll(ctx context.Context) (snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	s := snapshot{Backend: p.backend, Engine: p.engine, Up: true, Locks: []pageLock{}}
	var first error
	names, err := p.expand(ctx)
	if err != nil {
		first = err
	}
	reads, errs := p.read(ctx, names)
	for _, err := range errs {
		first = firstErr(first, err)
	}
	s.Time = p.now()
	if first != nil {
		s.Up, s.Error = false, p.scrub(first.Error())
		p.failed()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]time.Time{}
	for i, n := range names {
		if errs[i] != nil {
			s.Locks = append(s.Locks, pageLock{Name: n, Error: p.scrub(errs[i].Error())})
			continue
		}
		s.Locks = append(s.Locks, p.page(n, reads[i], s.Time, seen))
	}
	p.seen = seen
	p.store(s)
	return s, first
}

// read reads each lock of names; errs[i] is nil where reads[i] worked.
func (p *poller) read(ctx context.Context, names []string) (reads []lockRead, errs []error) {
	reads, errs = make([]lockRead, len(names)), make([]error, len(names))
	for i, n := range names {
		reads[i], errs[i] = p.view(ctx, n)
	}
	return reads, errs
}

func firstErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// expand turns the command line's NAMEs and PREFIXes into lock names, in
// the order given, each once.
func (p *poller) expand(ctx context.Context) ([]string, error) {
	var out []string
	var errs []error
	have := map[string]bool{}
	for _, n := range p.names {
		names := []string{n}
		if prefix, ok := strings.CutSuffix(n, prefixSuffix); ok {
			var err error
			if names, err = p.list(ctx, prefix); err != nil {
				errs = append(errs, err)
			}
		}
		for _, n := range names {
			if !have[n] {
				have[n] = true
				out = append(out, n)
			}
		}
	}
	return out, errors.Join(errs...)
}

// page is the snapshot's form of r, read at now: every entry stamped with
// when the exporter first saw it (p.seen, from the last poll), which is
// recorded in seen for the next.
func (p *poller) page(name string, r lockRead, now time.Time, seen map[string]time.Time) pageLock {
	in := r.in
	l := pageLock{Name: name, Permits: in.Permits, Notes: make([]string, 0, len(in.Notes))}
	for _, n := range in.Notes {
		l.Notes = append(l.Notes, p.scrub(n)) // a Redlock node's error may quote a server
	}
	if r.tokenBound != 0 {
		b := r.tokenBound
		l.TokenBound = &b
	}
	conv := func(role string, es []baton.Entry) []pageEntry {
		out := make([]pageEntry, 0, len(es))
		for _, e := range es {
			k := entryKey(name, role, e)
			t, ok := p.seen[k]
			if !ok {
				t = now
			}
			seen[k] = t
			out = append(out, pageEntry{EntryJSON: inspect.ToEntryJSON(e), Expired: expired(e, p.queue), SeenMS: now.Sub(t).Milliseconds()})
		}
		return out
	}
	l.Holders, l.Waiters = conv("holder", in.Holders), conv("waiting", in.Waiters)
	if len(in.Other) > 0 {
		l.Other = conv("other", in.Other)
	}
	return l
}

// store keeps s as the last snapshot and sends it to every subscriber.
// The caller holds p.mu.
func (p *poller) store(s snapshot) {
	p.last = s
	b, err := json.Marshal(s)
	if err != nil {
		panic("baton: exporter snapshot: " + err.Error()) // plain data: a bug
	}
	p.lastJSON = b
	for ch := range p.subs {
		select { // keep only the newest snapshot for a slow reader
		case <-ch:
		default:
		}
		ch <- b
	}
}

// entryKey identifies an entry across polls: a new grant has a new token
// or owner, a waiter turning holder starts a new hold.
func entryKey(lock, role string, e baton.Entry) string {
	return strings.Join([]string{lock, role, e.Owner, e.Mode, strconv.FormatUint(e.Token, 10)}, "\x00")
}

// snapshot returns the last snapshot and its JSON.
func (p *poller) snapshot() (snapshot, []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last, p.lastJSON
}

// subscribe returns a channel that receives every snapshot's JSON from
// now on (a slow reader gets the newest), and its cancel.
func (p *poller) subscribe() (<-chan []byte, func()) {
	ch := make(chan []byte, 1)
	p.mu.Lock()
	if p.subs == nil {
		p.subs = map[chan []byte]struct{}{}
	}
	p.subs[ch] = struct{}{}
	p.mu.Unlock()
	return ch, func() {
		p.mu.Lock()
		delete(p.subs, ch)
		p.mu.Unlock()
	}
}

// run polls every interval until ctx ends; logf reports the backend going
// down and coming back, once each, not at every poll.
func (p *poller) run(ctx context.Context, interval time.Duration, logf func(string, ...any)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	wasUp := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, _ := p.poll(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case wasUp && !s.Up:
			logf("backend %s: poll failed: %s", p.backend, s.Error)
		case !wasUp && s.Up:
			logf("backend %s: polls work again", p.backend)
		}
		wasUp = s.Up
	}
}
