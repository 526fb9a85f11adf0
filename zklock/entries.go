package zklock

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/go-zookeeper/zk"
)

// protectedPrefix starts every entry name, as in Curator's protected mode:
// "_c_<uuid>-<kind><sequence>".
const protectedPrefix = "_c_"

var kinds = []queuekit.Kind{queuekit.KindMutex, queuekit.KindRead, queuekit.KindWrite, queuekit.KindLatch, queuekit.KindLease}

// newUUID returns a random (version 4) UUID in Curator's 36-character form.
func newUUID() string {
	var b [36]byte
	putUUID(b[:])
	return string(b[:])
}

// putUUID writes a random (version 4) UUID in Curator's 36-character form
// into dst[:36]. It is on every acquire's path, so it formats into the
// caller's buffer instead of going through hex strings and concatenation.
func putUUID(dst []byte) {
	const digits = "0123456789abcdef"
	var r [16]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails on supported platforms
	r[6] = r[6]&0x0f | 0x40
	r[8] = r[8]&0x3f | 0x80
	j := 0
	for i, v := range r {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst[j] = '-'
			j++
		}
		dst[j], dst[j+1] = digits[v>>4], digits[v&0x0f]
		j += 2
	}
}

// protectedPath returns "<chroot>/<n>/_c_<uuid>-<kind>" and the length of
// its "<chroot>/<n>/" part, built with a single allocation: the lock
// directory is the path's prefix, not a string of its own.
func protectedPath(chroot, n string, kind queuekit.Kind) (path string, dirLen int) {
	dirLen = len(chroot) + 1 + len(n) + 1
	var b strings.Builder
	b.Grow(dirLen + len(protectedPrefix) + 36 + 1 + len(kind))
	b.WriteString(chroot)
	b.WriteByte('/')
	b.WriteString(n)
	b.WriteByte('/')
	b.WriteString(protectedPrefix)
	var u [36]byte
	putUUID(u[:])
	b.Write(u[:])
	b.WriteByte('-')
	b.WriteString(string(kind))
	return b.String(), dirLen
}

// parseEntry reads a child name of a lock directory as Curator does: the
// sort key is the sequence after the recipe's marker. Names that are not
// entries of a known kind (or whose sequence overflowed into a negative
// number) are not entries.
func parseEntry(parent, name string) (queuekit.Entry, bool) {
	k, seq, ok := parseName(name)
	if !ok {
		return queuekit.Entry{}, false
	}
	return queuekit.Entry{Key: parent + "/" + name, Kind: k, Seq: seq}, true
}

// createdEntry is parseEntry of the path a create in parent returned: the
// path itself is the key.
func createdEntry(parent, created string) (queuekit.Entry, bool) {
	name, ok := strings.CutPrefix(created, parent)
	if !ok || len(name) < 2 || name[0] != '/' {
		return queuekit.Entry{}, false
	}
	k, seq, ok := parseName(name[1:])
	if !ok {
		return queuekit.Entry{}, false
	}
	return queuekit.Entry{Key: created, Kind: k, Seq: seq}, true
}

// parseName is parseEntry without the key: it allocates nothing, so a read
// can scan a directory of thousands of children and build keys only for
// the entries it returns.
func parseName(name string) (queuekit.Kind, uint64, bool) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if len(name)-i < 10 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(name[i:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	for _, k := range kinds {
		if strings.HasSuffix(name[:i], string(k)) {
			return k, seq, true
		}
	}
	return "", 0, false
}

func knownKind(k queuekit.Kind) bool { return slices.Contains(kinds, k) }

// Enqueue creates this session's EPHEMERAL_SEQUENTIAL entry
// "<dir>/_c_<uuid>-<kind><seq>" (Curator's protected create). When the
// create's result is unknown it never re-creates blindly: it waits until the
// connection is back on the same session, lists the directory for the
// attempt's "_c_<uuid>-" prefix, adopts only entries whose ephemeral owner
// is this session (keeping the smallest and deleting the rest), and only if
// there is none re-creates after a backoff. If the session is lost
// meanwhile it fails with ErrSessionLost: nothing is adopted across
// sessions. Missing parents are created as container nodes. The entry's
// data is the client's holder record (see holderSep).
func (s *session) Enqueue(ctx context.Context, dir string, kind queuekit.Kind) (queuekit.Entry, error) {
	return s.create(ctx, dir, kind, s.c.proc)
}

// EnqueueData is Enqueue with data as the entry's znode data (see
// queuekit.DataSession): the semaphore's "baton:permits=N", followed by the
// holder record, and the election's candidate ID alone, which Curator's
// LeaderLatch reads as the participant id.
func (s *session) EnqueueData(ctx context.Context, dir string, kind queuekit.Kind, data []byte) (queuekit.Entry, error) {
	return s.create(ctx, dir, kind, s.c.entryData(kind, data))
}

// create is Enqueue and EnqueueData with the znode data as given.
func (s *session) create(ctx context.Context, dir string, kind queuekit.Kind, data []byte) (queuekit.Entry, error) {
	if !knownKind(kind) {
		return queuekit.Entry{}, fmt.Errorf("zklock: entry kind %q: %w", kind, baton.ErrInvalidOption)
	}
	n, err := s.c.dirName(dir)
	if err != nil {
		return queuekit.Entry{}, err
	}
	path, dirLen := protectedPath(s.c.opts.Chroot, n, kind)
	parent := path[:dirLen-1]
	prefix := path[dirLen : len(path)-len(kind)] // "_c_<uuid>-"
	retry := 0
	backoff := func() error {
		t := time.NewTimer(s.c.opts.Backoff.Delay(retry))
		defer t.Stop()
		retry++
		select {
		case <-t.C:
			return nil
		case <-s.lost:
			return s.lostErr()
		case <-ctx.Done():
			return s.ctxErr(ctx)
		}
	}
	for {
		if err := s.awaitHeld(ctx); err != nil {
			return queuekit.Entry{}, err
		}
		var (
			o       *op[string]
			created string
		)
		if ctx.Done() == nil {
			// A context that can never end needs no goroutine to leave by
			// (nor a closure to hand it).
			created, err = s.conn.Create(path, data, zk.FlagEphemeralSequential, s.c.acl)
		} else {
			o = goOp(s, func() (string, error) { return s.conn.Create(path, data, zk.FlagEphemeralSequential, s.c.acl) })
			created, err = o.wait(ctx)
		}
		switch {
		case err == nil:
			e, ok := createdEntry(parent, created)
			if !ok {
				return queuekit.Entry{}, fmt.Errorf("zklock: server named the entry %q, not a sequential node", created)
			}
			if st, _ := s.Observe(); st == baton.Lost {
				return queuekit.Entry{}, s.lostErr() // the entry dies with the session
			}
			e.Owner = s.idString()
			return e, nil
		case ctx.Err() != nil && err == ctx.Err():
			// The create may still land: the session's cleanup removes it.
			s.abandonCreate(parent, prefix, o)
			return queuekit.Entry{}, s.ctxErr(ctx)
		case errors.Is(err, zk.ErrNoNode):
			if err := s.mkdirs(ctx, parent); err != nil {
				return queuekit.Entry{}, err
			}
			if retry > 0 { // a reaper raced us: don't spin
				if err := backoff(); err != nil {
					return queuekit.Entry{}, err
				}
			}
			retry++
		case isUnknown(err):
			if o == nil {
				o = doneOp(created, err) // for the cleaner, should recovery give up
			}
			e, found, rerr := s.resolve(ctx, dir, parent, prefix)
			if rerr != nil {
				s.abandonCreate(parent, prefix, o)
				return queuekit.Entry{}, rerr
			}
			if found {
				return e, nil
			}
			// Nothing landed: re-create, but never instantly.
			if err := backoff(); err != nil {
				s.abandonCreate(parent, prefix, o)
				return queuekit.Entry{}, err
			}
		default:
			return queuekit.Entry{}, s.opErr(ctx, "create "+path, err)
		}
	}
}

// resolve recovers a create of unknown result once the session is
// connected again: see recoverCreate. Transient failures are retried with
// backoff while the session lives.
func (s *session) resolve(ctx context.Context, dir, parent, prefix string) (queuekit.Entry, bool, error) {
	for attempt := 0; ; attempt++ {
		if err := s.awaitHeld(ctx); err != nil {
			return queuekit.Entry{}, false, err
		}
		e, found, err := s.recoverCreate(ctx, dir, parent, prefix)
		if err == nil || !isUnknown(err) {
			return e, found, err
		}
		t := time.NewTimer(s.c.opts.Backoff.Delay(attempt))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return queuekit.Entry{}, false, s.ctxErr(ctx)
		}
	}
}

// recoverCreate lists parent (the directory of the lock dir) for children
// named prefix+…, keeps those whose ephemeral owner is this session (one
// Exists per candidate: only here, never in List), adopts the smallest and
// deletes the others. A node of another session is neither adopted nor
// touched. An adoption is reported to the client's Observer
// (baton.EventRecovered, Count the duplicates deleted).
func (s *session) recoverCreate(ctx context.Context, dir, parent, prefix string) (queuekit.Entry, bool, error) {
	id := s.sessionID()
	kids, err := call(ctx, s, func() ([]string, error) {
		k, _, err := s.conn.Children(parent)
		return k, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return queuekit.Entry{}, false, nil
	}
	if err != nil {
		return queuekit.Entry{}, false, err
	}
	var mine []queuekit.Entry
	for _, k := range kids {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		e, ok := parseEntry(parent, k)
		if !ok {
			continue
		}
		st, err := call(ctx, s, func() (*zk.Stat, error) {
			ok, st, err := s.conn.Exists(e.Key)
			if err == nil && !ok {
				st = nil
			}
			return st, err
		})
		if err != nil {
			return queuekit.Entry{}, false, err
		}
		if st != nil && st.EphemeralOwner == id {
			mine = append(mine, e)
		}
	}
	// The owner check only means something while the session is the one
	// that was checked: a lost session adopts nothing.
	if st, _ := s.Observe(); st == baton.Lost {
		return queuekit.Entry{}, false, s.lostErr()
	}
	if len(mine) == 0 {
		return queuekit.Entry{}, false, nil
	}
	slices.SortFunc(mine, func(a, b queuekit.Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, dup := range mine[1:] {
		_, err := call(ctx, s, func() (struct{}, error) { return struct{}{}, s.conn.Delete(dup.Key, -1) })
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			s.Abandon(dup)
		}
	}
	e := mine[0]
	e.Owner = s.idString()
	if o := s.c.opts.Observer; o != nil {
		engine.Emit(ctx, o, baton.Event{
			Kind: baton.EventRecovered, Engine: "zk", Name: dir, Acquire: queuekit.AcquireID(ctx),
			Owner: e.Key, Session: e.Owner, Count: len(mine) - 1,
		})
	}
	return e, true, nil
}

// mkdirs creates every missing node of path as a container node (as
// Curator's creatingParentContainersIfNeeded does): the server deletes a
// container once its last child is gone, so lock directories do not pile
// up.
//
// A parent container created a moment ago can be reaped before its child is
// created (nothing is under it yet), which makes that create fail with
// NoNode: try again, a few times.
func (s *session) mkdirs(ctx context.Context, path string) error {
	const attempts = 5
	var err error
	for range attempts {
		if err = s.mkdirsOnce(ctx, path); !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return err
}

// mkdirsOnce creates path as a container, and its missing ancestors only
// when the server says one is missing, deepest first. The usual case is a
// lock directory the server reaped while its parents stayed: one request,
// where creating every level from the top would send one per level (each a
// write the server logs, NodeExists or not).
func (s *session) mkdirsOnce(ctx context.Context, path string) error {
	create := func() error {
		_, err := call(ctx, s, func() (string, error) {
			return s.conn.CreateContainer(path, nil, zk.FlagContainer, s.c.acl)
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		return nil
	}
	err := create()
	if i := strings.LastIndexByte(path, '/'); errors.Is(err, zk.ErrNoNode) && i > 0 {
		if err := s.mkdirsOnce(ctx, path[:i]); err != nil {
			return err
		}
		err = create()
	}
	if err != nil {
		return s.opErr(ctx, "create container "+path, err)
	}
	return nil
}

// List reads dir with one Children call. When the caller's entry is in
// the read, the token is the directory's Pzxid from that very read plus
// the token floor: if this read grants the lock, every earlier holder's
// deletion is already reflected in it, so it exceeds every earlier grant's
// token. A sum that would overflow is an error, not a grant. Only the
// caller's own entry carries an Owner: reading other owners would cost a
// round trip per child.
func (s *session) List(ctx context.Context, dir string, own queuekit.Entry) (queuekit.Snapshot, error) {
	parent, r, err := s.readDir(ctx, dir, own)
	if err != nil || r.kids == nil {
		return queuekit.Snapshot{Own: -1}, err
	}
	snap := queuekit.Snapshot{Own: -1, Entries: make([]queuekit.Entry, 0, len(r.kids))}
	for _, k := range r.kids {
		if e, ok := parseEntry(parent, k); ok {
			snap.Entries = append(snap.Entries, e)
		}
	}
	slices.SortFunc(snap.Entries, func(a, b queuekit.Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	for i := range snap.Entries {
		if snap.Entries[i].Key == own.Key {
			snap.Own = i
			snap.Entries[i].Owner = own.Owner
		}
	}
	if snap.Own >= 0 {
		if snap.Token, err = s.token(parent, r.st); err != nil {
			return queuekit.Snapshot{}, err
		}
		snap.Alone = len(r.kids) == snap.Own+1
	}
	return snap, nil
}

// dirRead is one getChildren of a lock directory.
type dirRead struct {
	kids []string
	st   *zk.Stat
}

// readDir reads dir's lock directory with one Children call, riding out
// a short disconnection. A missing directory is a read with nil kids and
// no error; a read that ends on a lost session fails.
func (s *session) readDir(ctx context.Context, dir string, own queuekit.Entry) (string, dirRead, error) {
	parent, err := s.c.parentOf(dir, own.Key)
	if err != nil {
		return "", dirRead{}, err
	}
	var r dirRead
	if s.direct(ctx) {
		if r, err = children(s.conn, parent); isUnknown(err) {
			r, err = retryIdem(ctx, s, s.childrenCall(parent), 1)
		}
	} else {
		r, err = callIdem(ctx, s, s.childrenCall(parent))
	}
	if errors.Is(err, zk.ErrNoNode) {
		return parent, dirRead{}, nil
	}
	if err != nil {
		return "", dirRead{}, s.opErr(ctx, "list "+parent, err)
	}
	if st, _ := s.Observe(); st == baton.Lost {
		return "", dirRead{}, s.lostErr()
	}
	return parent, r, nil
}

// children is one getChildren of parent; a directory without children
// reads as an empty, non-nil list.
func children(conn *zk.Conn, parent string) (dirRead, error) {
	k, st, err := conn.Children(parent)
	if k == nil && err == nil {
		k = []string{}
	}
	return dirRead{k, st}, err
}

// childrenCall is children as a call for callIdem. The closure is built
// only where it is needed: a direct call builds none.
func (s *session) childrenCall(parent string) func() (dirRead, error) {
	return func() (dirRead, error) { return children(s.conn, parent) }
}

// deleteCall is a Delete of key (any version) as a call for callIdem.
func (s *session) deleteCall(key string) func() (struct{}, error) {
	return func() (struct{}, error) { return struct{}{}, s.conn.Delete(key, -1) }
}

// token is the fencing token of a grant by the read st of parent: its
// Pzxid plus the token floor.
func (s *session) token(parent string, st *zk.Stat) (uint64, error) {
	t, err := engine.FloorToken(uint64(st.Pzxid), s.c.opts.TokenFloor)
	if err != nil {
		return 0, fmt.Errorf("zklock: lock %s: %w", parent, err)
	}
	return t, nil
}

// Watch waits for e to go. It reads e with GetW rather than ExistsW, as
// Curator does: on a missing node getData sets no watch, so a predecessor
// deleted between the queue read and the watch (CURATOR-527) leaves no
// stray creation watch behind and the returned channel is closed at once.
// The session's waiters on e share one watch (see watchSet): a watch that
// has not fired proves e unchanged since it was set, hence since snap.
// The returned channel is also closed when the session is lost or ctx
// ends; the goroutine that converts the watch ends with it. go-zookeeper
// cannot remove the watch itself: it stays registered, once per entry,
// until e changes or the session ends.
func (s *session) Watch(ctx context.Context, e queuekit.Entry, _ queuekit.Snapshot) (<-chan struct{}, error) {
	dw, err := s.dataWatch(ctx, e.Key)
	out := make(chan struct{})
	if errors.Is(err, zk.ErrNoNode) {
		close(out)
		return out, nil
	}
	if err != nil {
		return nil, s.opErr(ctx, "watch "+e.Key, err)
	}
	if !s.spawn(func() {
		defer close(out)
		select {
		case <-dw.ch: // deleted, changed, or the connection closed
			s.watches.forget(e.Key, dw)
		case <-s.lost:
		case <-ctx.Done():
		}
	}) {
		close(out)
	}
	return out, nil
}

// dataWatch returns a settled data watch on path: the session's live one,
// or one set now with GetW. It waits for a GetW another waiter has in
// flight, and sets its own when that one failed (its caller may have
// left).
func (s *session) dataWatch(ctx context.Context, path string) (*dataWatch, error) {
	for {
		dw, first := s.watches.join(path)
		if first {
			ch, err := callIdem(ctx, s, func() (<-chan zk.Event, error) {
				_, _, ch, err := s.conn.GetW(path)
				return ch, err
			})
			s.watches.settle(path, dw, ch, err)
			return dw, err
		}
		select {
		case <-dw.ready:
		case <-s.lost:
			return nil, s.lostErr()
		case <-ctx.Done():
			return nil, s.ctxErr(ctx)
		}
		if dw.err == nil || errors.Is(dw.err, zk.ErrNoNode) {
			return dw, dw.err
		}
	}
}

// Data reads e's znode data; ok is false when e is gone. A lease's holder
// record is left out: the semaphore reads its N from the rest.
func (s *session) Data(ctx context.Context, e queuekit.Entry) ([]byte, bool, error) {
	data, err := callIdem(ctx, s, func() ([]byte, error) {
		d, _, err := s.conn.Get(e.Key)
		return d, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.opErr(ctx, "read "+e.Key, err)
	}
	if e.Kind == queuekit.KindLease {
		data, _ = splitHolder(data)
	}
	return data, true, nil
}

// WatchDir returns a channel closed once dir's entries differ from snap's
// (queuekit.DirWatcher). It sets a children watch with the read it compares,
// so no change after that read can be missed; a change between snap's read
// and this one closes the channel at once. A missing directory gets an
// exists watch instead, which fires when it is created. The goroutine that
// converts the watch ends when it fires, when ctx ends or when the session
// ends (go-zookeeper's watch channel is buffered, so leaving it unread
// blocks nothing; the watch itself stays registered until it fires or the
// session ends, as go-zookeeper cannot remove watches).
func (s *session) WatchDir(ctx context.Context, dir string, snap queuekit.Snapshot) (<-chan struct{}, error) {
	parent, err := s.c.dirPath(dir)
	if err != nil {
		return nil, err
	}
	type res struct {
		kids    []string
		missing bool // ChildrenW found no directory; ch is an exists watch
		exists  bool // the exists watch found it created meanwhile
		ch      <-chan zk.Event
	}
	r, err := callIdem(ctx, s, func() (res, error) {
		k, _, ch, err := s.conn.ChildrenW(parent)
		if errors.Is(err, zk.ErrNoNode) {
			ok, _, ch, err := s.conn.ExistsW(parent)
			return res{missing: true, exists: ok, ch: ch}, err
		}
		return res{kids: k, ch: ch}, err
	})
	if err != nil {
		return nil, s.opErr(ctx, "watch "+parent, err)
	}
	out := make(chan struct{})
	differs := r.missing && r.exists // created since the failed ChildrenW: re-read
	if !differs {
		now := make(map[string]bool, len(r.kids))
		for _, k := range r.kids {
			if e, ok := parseEntry(parent, k); ok {
				now[e.Key] = true
			}
		}
		differs = len(now) != len(snap.Entries)
		for _, e := range snap.Entries {
			differs = differs || !now[e.Key]
		}
	}
	if differs {
		close(out)
		return out, nil
	}
	if !s.spawn(func() {
		defer close(out)
		select {
		case <-r.ch:
		case <-s.lost:
		case <-ctx.Done():
		}
	}) {
		close(out)
	}
	return out, nil
}

// Delete removes exactly e (any version). A missing node is success, so a
// retry after an unknown result is safe; Delete itself retries across a
// short disconnection while ctx lasts.
func (s *session) Delete(ctx context.Context, e queuekit.Entry) error {
	if st, _ := s.Observe(); st == baton.Lost {
		return s.lostErr()
	}
	var err error
	if s.direct(ctx) {
		if err = s.conn.Delete(e.Key, -1); isUnknown(err) {
			_, err = retryIdem(ctx, s, s.deleteCall(e.Key), 1)
		}
	} else {
		_, err = callIdem(ctx, s, s.deleteCall(e.Key))
	}
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return s.opErr(ctx, "delete "+e.Key, err)
}

// Abandon hands e to the session's cleaner. It never blocks.
func (s *session) Abandon(e queuekit.Entry) {
	s.cmu.Lock()
	s.orphans[e.Key] = struct{}{}
	s.cmu.Unlock()
	s.poke()
}

func (s *session) abandonCreate(parent, prefix string, o *op[string]) {
	s.cmu.Lock()
	s.creates = append(s.creates, &abandonedCreate{parent: parent, prefix: prefix, op: o})
	s.cmu.Unlock()
	s.poke()
}

func (s *session) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// cleaner deletes abandoned entries and the results of abandoned creates as
// soon as the server answers. Owner: the session; it returns when the
// session is lost or closed — the server then removes the session's
// ephemeral entries itself.
func (s *session) cleaner() {
	retry := 0
	for {
		st, changed := s.Observe()
		if st == baton.Lost {
			return
		}
		s.cmu.Lock()
		pending := len(s.orphans) + len(s.creates)
		s.cmu.Unlock()
		switch {
		case pending == 0:
			select {
			case <-s.wake:
			case <-s.lost:
				return
			}
			continue
		case st != baton.Held:
			select {
			case <-changed:
			case <-s.lost:
				return
			}
			continue
		}
		if s.cleanPass() {
			retry = 0
			continue
		}
		t := time.NewTimer(s.c.opts.Backoff.Delay(retry))
		retry++
		select {
		case <-t.C:
		case <-s.lost:
			t.Stop()
			return
		}
	}
}

// cleanPass makes one attempt at every job and reports whether all
// finished.
func (s *session) cleanPass() bool {
	s.cmu.Lock()
	keys := make([]string, 0, len(s.orphans))
	for k := range s.orphans {
		keys = append(keys, k)
	}
	creates := s.creates
	s.creates = nil
	s.cmu.Unlock()

	ok := true
	for _, k := range keys {
		if err := s.conn.Delete(k, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			ok = false
			continue
		}
		s.cmu.Lock()
		delete(s.orphans, k)
		s.cmu.Unlock()
	}
	var left []*abandonedCreate
	for _, c := range creates {
		if !s.cleanCreate(c) {
			left = append(left, c)
			ok = false
		}
	}
	if len(left) > 0 {
		s.cmu.Lock()
		s.creates = append(s.creates, left...)
		s.cmu.Unlock()
	}
	return ok
}

// cleanCreate waits for the abandoned create's own call to end (so the
// listing below is ordered after it on the session), then removes what it
// made: the exact node when its answer arrived, else every node of the
// session carrying the attempt's prefix.
func (s *session) cleanCreate(c *abandonedCreate) bool {
	select {
	case <-c.op.done:
	case <-s.lost:
		return true
	}
	switch {
	case c.op.err == nil:
		err := s.conn.Delete(c.op.v, -1)
		return err == nil || errors.Is(err, zk.ErrNoNode)
	case !isUnknown(c.op.err):
		return true // definitely not created
	}
	id := s.sessionID()
	kids, _, err := s.conn.Children(c.parent)
	if errors.Is(err, zk.ErrNoNode) {
		return true
	}
	if err != nil {
		return false
	}
	for _, k := range kids {
		if !strings.HasPrefix(k, c.prefix) {
			continue
		}
		p := c.parent + "/" + k
		ok, st, err := s.conn.Exists(p)
		if err != nil {
			return false
		}
		if !ok || st.EphemeralOwner != id {
			continue
		}
		if err := s.conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false
		}
	}
	return true
}
