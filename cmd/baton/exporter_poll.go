package main

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
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

// pageLock is a lock of a snapshot; its entries carry how long the
// exporter has seen them.
type pageLock struct {
	lockView
	Entries []pageEntry `json:"entries"`
}

// pageEntry is an entry with SeenMS, how long this exporter has seen it
// (the same session, kind, state and token): a lower bound of its age on
// the engines that keep no creation time.
type pageEntry struct {
	entryJSON
	SeenMS int64 `json:"seen_ms"`
}

// poller reads the backend every interval in one goroutine, however many
// scrapes and pages there are, and publishes each snapshot to the page's
// event streams.
type poller struct {
	backend, engine string // shown: the URL redacted
	view            viewFunc
	// list expands a prefix; nil when the engine cannot list.
	list  func(ctx context.Context, prefix string) ([]string, error)
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
	for _, n := range names {
		v, err := p.view(ctx, n)
		if err != nil {
			first = firstErr(first, err)
			v = lockView{Name: n, Error: p.scrub(err.Error())}
		}
		s.Locks = append(s.Locks, pageLock{lockView: v})
	}
	s.Time = p.now()
	if first != nil {
		s.Up, s.Error = false, p.scrub(first.Error())
		p.failed()
	}
	p.store(s)
	return s, first
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

// store keeps s as the last snapshot, stamps how long each entry has been
// seen, and sends it to every subscriber.
func (p *poller) store(s snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]time.Time{}
	for i := range s.Locks {
		l := &s.Locks[i]
		l.Entries = make([]pageEntry, 0, len(l.lockView.Entries))
		for _, e := range l.lockView.Entries {
			k := entryKey(l.Name, e)
			t, ok := p.seen[k]
			if !ok {
				t = s.Time
			}
			seen[k] = t
			l.Entries = append(l.Entries, pageEntry{entryJSON: e, SeenMS: s.Time.Sub(t).Milliseconds()})
		}
	}
	p.seen = seen
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
// or session, a waiter turning holder starts a new hold.
func entryKey(lock string, e entryJSON) string {
	tok := ""
	if e.Token != nil {
		tok = strconv.FormatUint(*e.Token, 10)
	}
	return strings.Join([]string{lock, e.Entry, e.Kind, e.Session, e.State, tok}, "\x00")
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
