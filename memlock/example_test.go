package memlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/clock"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/memlock"
)

// The basic setup: a server on a virtual clock, one client per simulated
// process, and the recipes of package queuekit on it.
func Example() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := memlock.NewServer(memlock.Options{Clock: fake, SessionTTL: 10 * time.Second})
	defer srv.Close()

	c := srv.Client("worker-1")
	defer c.Close()
	m, err := c.Mutex("jobs/nightly")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	l, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(l.Name(), l.Token(), l.State())
	fmt.Println(srv.Entries("jobs/nightly"))
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}
	fmt.Println(l.State(), len(srv.Entries("jobs/nightly")))
	// Output:
	// jobs/nightly 1 held
	// [{lock-0000000001 worker-1 worker-1#1}]
	// released 0
}

// store is a tiny fenced resource: it refuses a write whose token does not
// pass the fence rule (fence.Accepts) against the last accepted write, as a
// database fenced with package fence would.
type store struct {
	mu     sync.Mutex
	token  uint64
	owner  string
	values map[string]string
}

func (s *store) Put(token uint64, owner, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != 0 && !fence.Accepts(s.token, s.owner, token, owner) {
		return &fence.StaleError{Resource: key, Token: token, Owner: owner, StoredToken: s.token, StoredOwner: s.owner}
	}
	s.token, s.owner = token, owner
	if s.values == nil {
		s.values = make(map[string]string)
	}
	s.values[key] = value
	return nil
}

func (s *store) Get(key string) (string, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[key], s.token
}

// handler is the code under test: it takes the order's lock and writes the
// order's status with the lease's token.
type handler struct {
	store *store
	// beforeWrite, if set, runs between the grant and the write: the test
	// pauses the handler there.
	beforeWrite func(*baton.Lease)
}

func (h *handler) setStatus(ctx context.Context, m baton.Locker, order, status string) error {
	l, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	if h.beforeWrite != nil {
		h.beforeWrite(l)
	}
	err = h.store.Put(l.Token(), l.Owner(), order, status)
	// A lost lease's Release reports the loss (baton.ErrLost) too.
	return errors.Join(err, l.Release(context.WithoutCancel(ctx)))
}

// A test of a handler that writes under a lock: its holder pauses, the
// server expires its session, another client takes over, and the paused
// holder's late write is refused by the fenced store.
func Example_fencedWrite() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := memlock.NewServer(memlock.Options{Clock: fake, SessionTTL: 10 * time.Second})
	defer srv.Close()
	a, b := srv.Client("a"), srv.Client("b")
	ma, _ := a.Mutex("orders/42")
	mb, _ := b.Mutex("orders/42")
	st := &store{}
	ctx := context.Background()

	// a's handler is granted the lock, then stalls before its write.
	paused, resume := make(chan *baton.Lease), make(chan struct{})
	slow := &handler{store: st, beforeWrite: func(l *baton.Lease) { paused <- l; <-resume }}
	errA := make(chan error)
	go func() { errA <- slow.setStatus(ctx, ma, "orders/42", "shipped") }()
	la := <-paused

	// While it stalls, a is cut off and the session TTL passes on the
	// server's clock: a's lease is lost first, then its entry deleted. The
	// fault methods are on the *memlock.Client that baton.As hands back.
	fa, _ := baton.As[*memlock.Client](a)
	fa.Partition()
	fake.Advance(10 * time.Second)
	<-la.Done()
	fmt.Println("a:", la.State(), "token", la.Token(), errors.Is(context.Cause(la.Context()), baton.ErrLost))

	// b's handler is granted with a larger token and writes.
	fmt.Println("b's write:", (&handler{store: st}).setStatus(ctx, mb, "orders/42", "cancelled"))

	// a wakes up and sends its late write: the store refuses it.
	close(resume)
	err := <-errA
	fmt.Println("a's late write stale:", errors.Is(err, baton.ErrStaleToken), "lost:", errors.Is(err, baton.ErrLost))
	fmt.Println(st.Get("orders/42"))
	// Output:
	// a: lost token 1 true
	// b's write: <nil>
	// a's late write stale: true lost: true
	// cancelled 3
}
