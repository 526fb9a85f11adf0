package memlock

import (
	"context"
	"fmt"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
)

// Client is one client of a Server, as one process of the system under
// test would have: one session at a time, shared by all its locks, and
// replaced by a new one at the next call after it was lost. Its recipes
// are package queuekit's, the same code that runs on ZooKeeper and etcd.
//
// A test holds the *baton.Client that Server.Client returns and reaches
// this one through baton.As, for its fault methods (Partition, Heal,
// Expire, LoseResponse), which script what a network or a server does to
// a real client; they are safe to call from any goroutine:
//
//	c := srv.Client("a")
//	mc, _ := baton.As[*memlock.Client](c)
//	mc.Partition()
type Client struct {
	srv  *Server
	name string
	b    backend
	proc string // the holder record stored with its entries (engine.ProcessData)

	// Guarded by srv.mu.
	cur         *session
	nsess       int
	changed     chan struct{} // closed and replaced at Heal and Close
	partitioned bool
	closed      bool
	losses      [Delete + 1]int // responses to lose, per Op
}

// Op names a call whose response LoseResponse loses.
type Op int

const (
	// Create is the creation of a queue entry: the first step of every
	// acquire.
	Create Op = iota + 1
	// Delete is the deletion of an entry: a release, or a TryLock that
	// gives back its place.
	Delete
)

// sessionID returns the ID of the client's current session, "" before its
// first call.
func (c *Client) sessionID() string {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.cur == nil {
		return ""
	}
	return c.cur.id
}

// mutex returns the reentrant mutex called name (queuekit.Mutex).
func (c *Client) mutex(name string) (*queuekit.Mutex, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	return queuekit.NewMutex(c.b, name, c.opts())
}

// rwMutex returns the fair read/write lock called name (queuekit.RWMutex).
func (c *Client) rwMutex(name string) (*queuekit.RWMutex, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	return queuekit.NewRWMutex(c.b, name, c.opts())
}

// semaphore returns the semaphore called name with n permits
// (queuekit.Semaphore). Its entries live in the directories name+"/locks"
// (the guard) and name+"/leases" (the permits).
func (c *Client) semaphore(name string, n int) (*queuekit.Semaphore, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	return queuekit.NewSemaphore(c.b, name, n, c.opts())
}

// election returns the leader election called name (queuekit.Election).
func (c *Client) election(name string) (*queuekit.Election, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	return queuekit.NewElection(c.b, name, c.opts())
}

// opts configures the client's recipes: the server's observer and clock.
func (c *Client) opts() queuekit.MutexOptions {
	return queuekit.MutexOptions{Observer: c.srv.obs, Clock: c.srv.clk}
}

func (c *Client) usable() error {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.closed {
		return c.closedErr()
	}
	return nil
}

func (c *Client) closedErr() error {
	return fmt.Errorf("memlock: client %s: %w", c.name, baton.ErrClosed)
}

// Partition cuts the client off from the server. Its session is Suspended
// at once and its leases follow (Lease.Observe tells when): the client
// notices the silence, as a ZooKeeper client notices a dropped connection.
// Its calls wait for Heal (or fail when their context ends, wrapping
// baton.ErrUnavailable). The server keeps the session for SessionTTL on
// its clock; when that passes, the session expires: the client's leases
// are Lost first, then the server deletes its entries and the next waiter
// can be granted. The expiry's timer is on the clock when Partition
// returns, so a test may advance a fake clock right away. A Partition
// while already cut off does nothing.
func (c *Client) Partition() {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.closed || c.partitioned {
		return
	}
	c.partitioned = true
	if c.cur != nil {
		c.cur.suspendLocked()
	}
}

// Heal reconnects a partitioned client. Before the session expired, the
// session and its leases are Held again, and the watches and cleanups that
// waited are delivered; after, the leases stay Lost and the client opens a
// new session at its next call.
func (c *Client) Heal() {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if !c.partitioned {
		return
	}
	c.partitioned = false
	c.notifyLocked()
	if c.cur != nil {
		c.cur.resumeLocked()
	}
}

// Expire makes the server expire the client's session now, as it would
// once SessionTTL passed: the client's leases are Lost, then its entries
// are deleted. It returns once they are. The client opens a new session
// at its next call (after Heal, if it is partitioned).
func (c *Client) Expire() {
	c.srv.mu.Lock()
	s := c.cur
	c.srv.mu.Unlock()
	if s != nil {
		c.srv.expire(s, errExpired)
	}
}

// LoseResponse makes the client lose the response to its next call of op:
// the server applies the call, the client cannot tell. A lost Create is
// resolved inside the acquire, as ZooKeeper's protected create resolves
// it (the acquire adopts the entry that landed, creates no second one, and
// leaves none behind). A lost Delete makes Release return an error
// wrapping ErrResponseLost while the entry is in fact gone, so the lock is
// free; calling Release again succeeds. Each call loses one more response.
func (c *Client) LoseResponse(op Op) {
	if op != Create && op != Delete {
		panic(fmt.Sprintf("memlock: LoseResponse(%d): no such Op", op))
	}
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	c.losses[op]++
}

// takeLossLocked consumes one pending loss of op's response.
func (c *Client) takeLossLocked(op Op) bool {
	if c.losses[op] == 0 {
		return false
	}
	c.losses[op]--
	return true
}

// shutdown closes the client; server says the server is closing, which
// ends even a partitioned client's session at once.
func (c *Client) shutdown(server bool) {
	c.srv.mu.Lock()
	if !c.closed {
		c.closed = true
		c.notifyLocked()
	}
	s := c.cur
	crash := c.partitioned && !server
	if s != nil && crash {
		s.loseLocked(c.closedErr())
	}
	c.srv.mu.Unlock()
	if s != nil && !crash {
		c.srv.expire(s, c.closedErr())
	}
}

func (c *Client) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// backend is the client's queuekit.Backend. It is unexported so that a
// Client's methods are only what a test calls.
type backend struct{ c *Client }

var _ queuekit.Backend = backend{}

// Engine returns "mem".
func (b backend) Engine() string { return "mem" }

// Session returns a handle on the client's current session, opening a new
// session when there is none or the last one was lost. A partitioned
// client waits for Heal.
func (b backend) Session(ctx context.Context, _ string) (queuekit.Session, error) {
	c := b.c
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	for {
		if c.closed {
			return nil, c.closedErr()
		}
		var expiring <-chan struct{}
		if !c.partitioned {
			if c.cur == nil || c.cur.state == baton.Lost {
				c.cur = c.newSessionLocked()
			}
			if c.cur.state == baton.Held {
				return &handle{s: c.cur}, nil
			}
			expiring = c.cur.changed // healed too late: the expiry is running
		}
		healed := c.changed
		c.srv.mu.Unlock()
		select {
		case <-healed:
		case <-expiring:
		case <-ctx.Done():
			c.srv.mu.Lock()
			return nil, fmt.Errorf("memlock: client %s cut off from the server: %w: %w", c.name, baton.ErrUnavailable, ctx.Err())
		}
		c.srv.mu.Lock()
	}
}

// Done tells the session that a recipe call, or the lease it granted, is
// over.
func (b backend) Done(s queuekit.Session, _ string) {
	if h, ok := s.(*handle); ok {
		h.release()
	}
}
