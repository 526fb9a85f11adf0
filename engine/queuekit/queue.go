package queuekit

import (
	"context"

	"github.com/baton-go/baton"
)

// Kind is a recipe's entry marker, the text between the protected prefix
// and the sequence in Curator's layout. Entries sort by the sequence after
// the marker.
type Kind string

// The markers of Curator's recipes, shared so Java and Go clients see each
// other's entries.
const (
	KindMutex Kind = "lock-"
	KindRead  Kind = "__READ__"
	KindWrite Kind = "__WRIT__"
	KindLatch Kind = "latch-"
	KindLease Kind = "lease-"
)

// Entry is one queue entry.
type Entry struct {
	Key   string // the engine's full path or key; unique
	Kind  Kind
	Seq   uint64 // sort key: ZooKeeper's sequence suffix, etcd's create revision
	Owner string // the owning session as the engine names it
	// ID identifies this entry's grant, unique across all grants of the
	// lock; empty means Key. Engines that reuse keys (etcd names a key
	// after its lease, and leases are pooled) set it.
	ID string
}

func (e Entry) id() string {
	if e.ID != "" {
		return e.ID
	}
	return e.Key
}

// Snapshot is one read of a lock directory.
type Snapshot struct {
	// Entries are the recipe's entries, sorted by Seq. Children that are
	// not entries of a known kind are left out.
	Entries []Entry
	// Own is the index of the reader's own entry in Entries, -1 if absent.
	Own int
	// Token is the fencing token the reader's entry gets if this read
	// grants it: the engine's raw counter plus the token floor (see
	// engine.FloorToken; an engine whose sum would overflow fails the read
	// instead). It is set only when Own >= 0.
	Token uint64
	// Rev is the engine's position of the read (etcd's header revision),
	// so a watch can start right after it. 0 where unused.
	Rev int64
	// Partial is set when Entries are only the newest entries before Own
	// (PredecessorLister): older ones may exist. A rule that finds its
	// blocker among them is right; one that would grant must look further.
	Partial bool
	// Ahead counts the entries before Own when Partial and the engine's
	// read counted them all (ZooKeeper reads the whole directory even when
	// it returns a window); 0 when it could not (etcd).
	Ahead int
	// Alone is set when the read saw nothing after Own: a first holder's
	// release then has no waiter to tell, and is a plain Delete (see
	// FirstReleaser). A waiter that comes later reads the queue as usual.
	Alone bool
}

// Session is one engine session. Entries it creates live as long as it
// does.
type Session interface {
	// ID names the session as entries' Owner fields do.
	ID() string
	// Observe returns the session's state — Held (healthy), Suspended (in
	// doubt) or Lost (final) — and a channel closed at its next change.
	Observe() (baton.State, <-chan struct{})
	// Enqueue creates this session's entry of kind in dir. When the create's
	// result is unknown the engine resolves it (protected create): it
	// returns an entry of this session only, and anything it could not
	// resolve is left to the session's cleanup.
	Enqueue(ctx context.Context, dir string, kind Kind) (Entry, error)
	// List reads dir. own is the caller's entry, used to fill Own and Token.
	List(ctx context.Context, dir string, own Entry) (Snapshot, error)
	// Watch returns a channel closed once e is gone. The watch covers every
	// change after snap was read: if e was deleted in between, the channel
	// is closed at once. It is also closed when the session ends.
	Watch(ctx context.Context, e Entry, snap Snapshot) (<-chan struct{}, error)
	// Delete removes exactly e. It returns nil if e is already gone, so a
	// retry after an unknown result is safe.
	Delete(ctx context.Context, e Entry) error
	// Abandon hands e to the session's own cleanup: it is deleted in the
	// background as soon as the server answers, or disappears with the
	// session. Abandon never blocks.
	Abandon(e Entry)
}

// DirWatcher is implemented by sessions that can watch a whole directory.
// The semaphore needs it: its one waiter (the holder of the semaphore's
// guard mutex) wakes on any change of the lease directory.
type DirWatcher interface {
	// WatchDir returns a channel closed once dir's entries differ from
	// snap, at once if they already do. It also closes when the session
	// ends.
	WatchDir(ctx context.Context, dir string, snap Snapshot) (<-chan struct{}, error)
}

// DataSession is implemented by sessions that store a small value with an
// entry and read it back: the semaphore stores its N there (so baton
// clients configured with different N can be told apart) and the election
// its candidate ID (Curator LeaderLatch's participant id, etcdctl elect's
// proposal). Engines without it lose nothing but those reports.
type DataSession interface {
	// EnqueueData is Enqueue storing data with the entry.
	EnqueueData(ctx context.Context, dir string, kind Kind, data []byte) (Entry, error)
	// Data reads what is stored with e. ok is false when e is gone (or its
	// key now holds a later grant).
	Data(ctx context.Context, e Entry) (data []byte, ok bool, err error)
}

// Backend is a queue engine.
type Backend interface {
	// Engine returns the short engine name ("zk", "etcd").
	Engine() string
	// Session returns the session a new entry in dir should live in. It
	// wraps baton.ErrUnavailable when no session could be had before ctx
	// ended, and baton.ErrClosed after Close.
	Session(ctx context.Context, dir string) (Session, error)
	// Done tells the backend the recipe no longer has an entry in dir on s
	// (engines that pool sessions per directory reuse it).
	Done(s Session, dir string)
}
