package memlock

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/clock"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

// DefaultSessionTTL is the session TTL when Options.SessionTTL is zero: a
// partitioned client's session expires, and its leases are Lost, once this
// much time has passed on the server's clock.
const DefaultSessionTTL = 10 * time.Second

// ErrResponseLost is wrapped by a call whose response a test made the
// client lose (Client.LoseResponse): the server applied the call, the
// client cannot tell whether it did. A Release that returns it may be
// called again.
var ErrResponseLost = errors.New("memlock: response lost, outcome unknown")

// Options configure NewServer. The zero value means the real clock,
// DefaultSessionTTL and no token floor.
type Options struct {
	// Clock is the server's time source, which times session expiry; nil
	// means clock.Real. Pass a *clock.Fake and the TTL passes only when
	// the test advances it.
	Clock clock.Clock
	// SessionTTL is how long a partitioned client's session survives on
	// the server; 0 means DefaultSessionTTL.
	SessionTTL time.Duration
	// TokenFloor is added to every fencing token the server's clients
	// issue (see the baton package doc: the recovery procedure after an
	// engine is rebuilt from scratch).
	TokenFloor uint64
	// Observer, if set, is told of every acquire and lease of the server's
	// clients (see queuekit.MutexOptions.Observer), timed on Clock; nil
	// reports nothing.
	Observer baton.Observer
}

// Server is the in-memory lock service: lock directories, the queues of
// entries in them, the token counters and the sessions of its clients. It
// is safe for concurrent use. Close it at the end of the test.
type Server struct {
	clk   clock.Clock
	ttl   time.Duration
	floor uint64
	obs   baton.Observer

	mu       sync.Mutex
	dirs     map[string]*dir
	clients  []*Client
	nclients int
	closed   bool
	closing  chan struct{}  // closed by Close
	timers   sync.WaitGroup // expiry callbacks scheduled on clk
}

// dir is one lock directory.
type dir struct {
	name string
	// seq numbers the entries; it is never rewound, so an entry's key is
	// never reused.
	seq uint64
	// token is bumped by every create and delete of an entry, as
	// ZooKeeper's Pzxid moves with every child change: a holder's granting
	// read already counts the deletion of every earlier holder's entry, so
	// its token exceeds theirs. RewindTokens moves it back.
	token    uint64
	entries  []*entry // sorted by seq
	watchers []*watch // fire at the next change of entries
}

// entry is one queue entry as the server holds it.
type entry struct {
	e       queuekit.Entry
	d       *dir
	s       *session
	data    []byte
	proc    string   // the creating client's holder record
	attempt string   // the protected-create attempt that made it
	watches []*watch // fire when the entry is deleted
}

// NewServer returns a server with no locks and no clients. It panics on a
// negative SessionTTL: that can only be a bug in the test.
func NewServer(opts Options) *Server {
	if opts.SessionTTL < 0 {
		panic(fmt.Sprintf("memlock: negative SessionTTL %v", opts.SessionTTL))
	}
	if opts.SessionTTL == 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	return &Server{
		clk:     clock.Or(opts.Clock),
		ttl:     opts.SessionTTL,
		floor:   opts.TokenFloor,
		obs:     opts.Observer,
		dirs:    make(map[string]*dir),
		closing: make(chan struct{}),
	}
}

// Client returns a new client of the server, as a separate process would
// have: the *baton.Client every engine gives, so that code written
// against *baton.Client is unit-tested on memlock. name labels its
// sessions ("name#1", "name#2", …) in entries and error messages; ""
// picks "client-<n>". The client opens its first session at its first
// call. Its fault methods are on the *memlock.Client that baton.As hands
// back.
func (srv *Server) Client(name string) *baton.Client {
	return engine.NewClient(connOf(srv.newClient(name)))
}

// newClient returns a new client of the server (see Client).
func (srv *Server) newClient(name string) *Client {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.nclients++
	if name == "" {
		name = fmt.Sprintf("client-%d", srv.nclients)
	}
	c := &Client{srv: srv, name: name, changed: make(chan struct{}), closed: srv.closed,
		proc: engine.ProcessData(engine.ThisProcess("", map[string]string{"client": name}))}
	c.b = backend{c}
	srv.clients = append(srv.clients, c)
	return c
}

// Close closes every client — each session ends, its leases are Lost, its
// entries deleted — and stops every timer the server scheduled on its
// clock. Later calls of its clients return baton.ErrClosed.
func (srv *Server) Close() {
	srv.mu.Lock()
	if srv.closed {
		srv.mu.Unlock()
		return
	}
	srv.closed = true
	close(srv.closing)
	clients := slices.Clone(srv.clients)
	srv.mu.Unlock()
	for _, c := range clients {
		c.shutdown(true)
	}
	srv.timers.Wait()
}

// Entry describes one entry of a lock directory, for tests' assertions.
type Entry struct {
	// Name is the entry's name in its directory: its recipe marker and
	// sequence number, "lock-0000000003", "__READ__0000000007".
	Name string
	// Client is the name of the client whose session created it.
	Client string
	// Session is the ID of that session.
	Session string
}

// Entries returns the entries of the lock directory name in queue order
// (nil when there are none). A mutex, read/write lock or election called
// name keeps its entries in the directory name; a semaphore in
// name+"/locks" (its guard) and name+"/leases" (its permits).
func (srv *Server) Entries(name string) []Entry {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	d := srv.dirs[strings.Trim(name, "/")]
	if d == nil {
		return nil
	}
	var out []Entry
	for _, en := range d.entries {
		out = append(out, Entry{
			Name:    strings.TrimPrefix(en.e.Key, d.name+"/"),
			Client:  en.s.c.name,
			Session: en.s.id,
		})
	}
	return out
}

// RewindTokens sets the token counter of the lock directory name, and of
// every directory below it (a semaphore's), back to to, as a token source
// that lost its state would (an engine rebuilt from scratch, a Redis
// failover to a replica behind the primary). The next grants then carry
// tokens a fenced resource has already seen and must refuse; TokenFloor is
// the recovery. Moving a counter forward panics: that is not a rewind.
func (srv *Server) RewindTokens(name string, to uint64) {
	name = strings.Trim(name, "/")
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for dn, d := range srv.dirs {
		if dn != name && !strings.HasPrefix(dn, name+"/") {
			continue
		}
		if to > d.token {
			panic(fmt.Sprintf("memlock: RewindTokens(%q, %d) would move the counter of %q forward from %d", name, to, dn, d.token))
		}
		d.token = to
	}
}

// dirLocked returns the directory called name, creating it.
func (srv *Server) dirLocked(name string) *dir {
	d := srv.dirs[name]
	if d == nil {
		d = &dir{name: name}
		srv.dirs[name] = d
	}
	return d
}

// createLocked appends a new entry of session s to d.
func (srv *Server) createLocked(s *session, d *dir, kind queuekit.Kind, data []byte, attempt string) *entry {
	d.seq++
	d.token++
	en := &entry{
		e: queuekit.Entry{
			Key:   fmt.Sprintf("%s/%s%010d", d.name, kind, d.seq),
			Kind:  kind,
			Seq:   d.seq,
			Owner: s.id,
		},
		d:       d,
		s:       s,
		data:    slices.Clone(data),
		proc:    s.c.proc,
		attempt: attempt,
	}
	d.entries = append(d.entries, en)
	s.entries[en.e.Key] = en
	d.changedLocked()
	return en
}

// findLocked returns the entry called key, nil if it does not exist.
func (srv *Server) findLocked(key string) *entry {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return nil
	}
	d := srv.dirs[key[:i]]
	if d == nil {
		return nil
	}
	for _, en := range d.entries {
		if en.e.Key == key {
			return en
		}
	}
	return nil
}

// removeLocked deletes en, bumps its directory's token and fires the
// watches on it and on the directory.
func (srv *Server) removeLocked(en *entry) {
	d := en.d
	i := slices.Index(d.entries, en)
	if i < 0 {
		return
	}
	d.entries = slices.Delete(d.entries, i, i+1)
	delete(en.s.entries, en.e.Key)
	d.token++
	for _, w := range en.watches {
		w.fireLocked()
	}
	en.watches = nil
	d.changedLocked()
}

// changedLocked fires the watches on d's entries.
func (d *dir) changedLocked() {
	for _, w := range d.watchers {
		w.fireLocked()
	}
	d.watchers = nil
}

// snapshotLocked reads d for the owner of own, with the raw token (the
// caller adds the floor).
func (srv *Server) snapshotLocked(d *dir, own queuekit.Entry) queuekit.Snapshot {
	snap := queuekit.Snapshot{Own: -1, Token: d.token, Entries: make([]queuekit.Entry, len(d.entries))}
	for i, en := range d.entries {
		snap.Entries[i] = en.e
		if own.Key != "" && en.e.Key == own.Key {
			snap.Own = i
		}
	}
	return snap
}
