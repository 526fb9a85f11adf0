package memlock

import (
	"context"
	"fmt"
	"slices"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

// handle is what Backend.Session hands one recipe call: the client's
// current session, plus the bookkeeping that lets the server wait, when
// the session expires, until the call or its lease has let go.
type handle struct {
	s    *session
	done bool // Backend.Done was called; guarded by the server's mutex
}

var (
	_ queuekit.Session     = (*handle)(nil)
	_ queuekit.DirWatcher  = (*handle)(nil)
	_ queuekit.DataSession = (*handle)(nil)
)

func (h *handle) srv() *Server { return h.s.c.srv }

// ID returns the session's ID, as entries' Owner fields name it.
func (h *handle) ID() string { return h.s.id }

// Observe returns the session's state and a channel closed at its next
// change.
func (h *handle) Observe() (baton.State, <-chan struct{}) {
	h.srv().mu.Lock()
	defer h.srv().mu.Unlock()
	return h.s.state, h.s.changed
}

// reachLocked waits, with the server's mutex held (released while
// waiting), until the session can talk to the server: at once when
// connected, after Heal when cut off. It fails when the session is lost or
// ctx ends first.
func (h *handle) reachLocked(ctx context.Context) error {
	srv := h.srv()
	for {
		switch h.s.state {
		case baton.Held:
			return nil
		case baton.Lost:
			return h.s.lostErrLocked()
		}
		ch := h.s.changed
		srv.mu.Unlock()
		select {
		case <-ch:
			srv.mu.Lock()
		case <-ctx.Done():
			srv.mu.Lock()
			if h.s.state == baton.Lost {
				return h.s.lostErrLocked()
			}
			return fmt.Errorf("memlock: session %s cut off from the server: %w: %w", h.s.id, baton.ErrUnavailable, ctx.Err())
		}
	}
}

// Enqueue creates this session's entry of kind in dir.
func (h *handle) Enqueue(ctx context.Context, dir string, kind queuekit.Kind) (queuekit.Entry, error) {
	return h.EnqueueData(ctx, dir, kind, nil)
}

// EnqueueData creates this session's entry of kind in dir, storing data
// with it. Every attempt is tagged (ZooKeeper's protected create): when
// the create's response is lost, the entry of this attempt and this
// session is looked up and adopted, the smallest one if several landed,
// the others deleted; only when none landed is the entry created again.
// An adoption is reported to the server's Observer (baton.EventRecovered),
// after the server's mutex is released.
func (h *handle) EnqueueData(ctx context.Context, dir string, kind queuekit.Kind, data []byte) (queuekit.Entry, error) {
	srv := h.srv()
	attempt := engine.NewOwnerID()
	var adopted *baton.Event
	if srv.obs != nil {
		defer func() { // runs after the Unlock deferred below
			if adopted != nil {
				engine.Emit(ctx, srv.obs, *adopted)
			}
		}()
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for {
		if err := h.reachLocked(ctx); err != nil {
			return queuekit.Entry{}, err
		}
		en := srv.createLocked(h.s, srv.dirLocked(dir), kind, data, attempt)
		if !h.done {
			h.s.handles[h] = struct{}{}
		}
		if !h.s.c.takeLossLocked(Create) {
			return en.e, nil
		}
		// The answer is lost: never create blindly again. A lost session
		// adopts nothing; its entries go with it.
		if err := h.reachLocked(ctx); err != nil {
			return queuekit.Entry{}, err
		}
		if e, dups, ok := h.recoverLocked(dir, attempt); ok {
			if srv.obs != nil {
				adopted = &baton.Event{
					Kind: baton.EventRecovered, Time: srv.clk.Now(), Engine: "mem", Name: dir,
					Acquire: queuekit.AcquireID(ctx), Owner: e.Key, Session: h.s.id, Count: dups,
				}
			}
			return e, nil
		}
	}
}

// recoverLocked finds the entries of attempt made by this session in dir,
// keeps the smallest and deletes the rest (dups of them).
func (h *handle) recoverLocked(dir, attempt string) (e queuekit.Entry, dups int, ok bool) {
	srv := h.srv()
	d := srv.dirs[dir]
	if d == nil {
		return queuekit.Entry{}, 0, false
	}
	var mine []*entry
	for _, en := range d.entries {
		if en.attempt == attempt && en.s == h.s {
			mine = append(mine, en)
		}
	}
	if len(mine) == 0 {
		return queuekit.Entry{}, 0, false
	}
	for _, dup := range mine[1:] {
		srv.removeLocked(dup)
	}
	return mine[0].e, len(mine) - 1, true
}

// List reads dir. The token is the directory's counter at this read plus
// the token floor; a sum past math.MaxUint64 fails the read (see
// engine.FloorToken) instead of wrapping.
func (h *handle) List(ctx context.Context, dir string, own queuekit.Entry) (queuekit.Snapshot, error) {
	srv := h.srv()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if err := h.reachLocked(ctx); err != nil {
		return queuekit.Snapshot{}, err
	}
	d := srv.dirs[dir]
	if d == nil {
		return queuekit.Snapshot{Own: -1, Token: srv.floor}, nil
	}
	snap := srv.snapshotLocked(d, own)
	if snap.Own >= 0 {
		tok, err := engine.FloorToken(snap.Token, srv.floor)
		if err != nil {
			return queuekit.Snapshot{}, fmt.Errorf("memlock: lock %q: %w", dir, err)
		}
		snap.Token = tok
	}
	return snap, nil
}

// Watch returns a channel closed once e is gone (at once if it already
// is) or the session ends.
func (h *handle) Watch(ctx context.Context, e queuekit.Entry, _ queuekit.Snapshot) (<-chan struct{}, error) {
	srv := h.srv()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if err := h.reachLocked(ctx); err != nil {
		return nil, err
	}
	w := h.s.newWatchLocked()
	if en := srv.findLocked(e.Key); en != nil {
		en.watches = append(en.watches, w)
	} else {
		w.closeLocked()
	}
	return w.ch, nil
}

// WatchDir returns a channel closed once dir's entries differ from snap's
// (at once if they already do) or the session ends.
func (h *handle) WatchDir(ctx context.Context, dir string, snap queuekit.Snapshot) (<-chan struct{}, error) {
	srv := h.srv()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if err := h.reachLocked(ctx); err != nil {
		return nil, err
	}
	d := srv.dirLocked(dir)
	w := h.s.newWatchLocked()
	same := len(d.entries) == len(snap.Entries)
	for i := 0; same && i < len(d.entries); i++ {
		same = d.entries[i].e.Key == snap.Entries[i].Key
	}
	if same {
		d.watchers = append(d.watchers, w)
	} else {
		w.closeLocked()
	}
	return w.ch, nil
}

// Delete removes exactly e; an entry already gone is success.
func (h *handle) Delete(ctx context.Context, e queuekit.Entry) error {
	srv := h.srv()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if err := h.reachLocked(ctx); err != nil {
		return err
	}
	if en := srv.findLocked(e.Key); en != nil {
		srv.removeLocked(en)
	}
	if h.s.c.takeLossLocked(Delete) {
		return fmt.Errorf("memlock: delete %s: %w", e.Key, ErrResponseLost)
	}
	return nil
}

// Abandon deletes e now if the session is connected, when it reconnects if
// it is cut off; a lost session's entries go with it.
func (h *handle) Abandon(e queuekit.Entry) {
	srv := h.srv()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	en := srv.findLocked(e.Key)
	if en == nil || en.s != h.s {
		return
	}
	switch h.s.state {
	case baton.Held:
		srv.removeLocked(en)
	case baton.Suspended:
		h.s.orphans = append(h.s.orphans, e.Key)
	}
}

// Data returns what is stored with e; ok is false once e is gone.
func (h *handle) Data(ctx context.Context, e queuekit.Entry) ([]byte, bool, error) {
	srv := h.srv()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if err := h.reachLocked(ctx); err != nil {
		return nil, false, err
	}
	en := srv.findLocked(e.Key)
	if en == nil {
		return nil, false, nil
	}
	return slices.Clone(en.data), true, nil
}

// release is Backend.Done: the recipe call, or the lease it granted, is
// over, so the session's expiry no longer waits for it.
func (h *handle) release() {
	srv := h.srv()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	delete(h.s.handles, h)
	h.s.settleLocked()
}
