package redislock

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton/internal/rediseval"
)

// conn is what a renewal runs on: the redis client, or the connection
// kept warm for renewals.
type conn interface {
	rediseval.Client
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// warmConn is a connection of the redis client's pool kept for the
// keeper's renewals, so that a renewal never waits for the pool or dials
// beside the caller's own requests. Through a slow link a new connection
// costs more round trips than the renewal itself (go-redis sends HELLO,
// then CLIENT SETINFO, before the first command), and a renewal that
// dialled one, because an acquire whose deadline had passed still held
// the connection the lease was granted on, answered after the lease's
// deadline: a false Lost. It is pinned by a PING in the background once
// the client is first granted a lease (pinAsync), and again after a
// renewal on it fails. Only a *redis.Client has connections to pin (a
// Cluster or a Ring routes each key), and only out of a pool of more
// than minPinPool.
//
// The Clients of one go-redis client share its warm connection (warmFor):
// thousands of Clients on one pool, one connection pinned by each, left
// their own requests no connection at all. A renewal that finds the
// shared connection busy with another Client's takes one of the pool.
type warmConn struct {
	rdb     *redis.Client
	refs    int        // Clients sharing w; guarded by warmConns.mu
	mu      sync.Mutex // held while conn is in use or replaced
	conn    *redis.Conn
	pinned  atomic.Bool // conn != nil, read without mu on the acquire path
	pinning atomic.Bool // a pin goroutine runs
	closed  atomic.Bool // the last Client sharing w has closed: conn goes back to the pool
}

// minPinPool is the smallest pool a warm connection is taken out of: it
// leaves the callers two at least.
const minPinPool = 2

// warmConns maps each go-redis client to the warm connection its Clients
// share.
var warmConns = struct {
	mu sync.Mutex
	m  map[*redis.Client]*warmConn
}{m: make(map[*redis.Client]*warmConn)}

// warmFor returns the warm connection of rdb's Clients, counting one more
// of them (release uncounts it), or nil where none is kept.
func warmFor(rdb redis.UniversalClient) *warmConn {
	rc, ok := rdb.(*redis.Client)
	if !ok || rc.Options().PoolSize <= minPinPool {
		return nil
	}
	warmConns.mu.Lock()
	defer warmConns.mu.Unlock()
	w := warmConns.m[rc]
	if w == nil {
		w = &warmConn{rdb: rc}
		warmConns.m[rc] = w
	}
	w.refs++
	return w
}

// release uncounts a Client that shared w (its Close); the last one
// returns the connection to the pool.
func (w *warmConn) release() {
	if w == nil {
		return
	}
	warmConns.mu.Lock()
	w.refs--
	last := w.refs == 0
	if last {
		delete(warmConns.m, w.rdb)
	}
	warmConns.mu.Unlock()
	if last {
		w.unpin()
	}
}

// run runs f on w's connection when it is free, else on the client's
// pool. After an error there the connection is dropped, a new one pinned
// and, unless ctx has ended, f runs once more on the pool: the server may
// have closed the connection while it sat pinned (a restart, CLIENT KILL,
// an idle timeout), which the pool checks before it lends a connection
// and a pinned one finds only at its next use; renewals may run twice.
func (w *warmConn) run(ctx context.Context, c *Client, f func(conn) error) error {
	if w == nil || !w.pinned.Load() || !w.mu.TryLock() {
		return f(c.rdb)
	}
	cn := w.conn
	if cn == nil {
		w.mu.Unlock()
		return f(c.rdb)
	}
	err := f(cn)
	if err != nil {
		w.dropLocked()
	}
	w.unlock()
	if err != nil {
		w.pinAsync(c)
		if ctx.Err() == nil {
			err = f(c.rdb)
		}
	}
	return err
}

func (w *warmConn) dropLocked() {
	if w.conn != nil {
		_ = w.conn.Close()
		w.conn = nil
		w.pinned.Store(false)
	}
}

// pinAsync pins a connection in a goroutine of the client's (Close waits
// for it), unless one is pinned or being pinned. It costs two atomic
// loads when there is nothing to do: every grant calls it.
func (w *warmConn) pinAsync(c *Client) {
	if w == nil || w.pinned.Load() || w.closed.Load() || !w.pinning.CompareAndSwap(false, true) {
		return
	}
	c.callMu.Lock()
	if c.draining {
		c.callMu.Unlock()
		w.pinning.Store(false)
		return
	}
	c.calls.Add(1)
	c.callMu.Unlock()
	go func() { // owner: the Client (calls); ends within a TTL
		defer c.calls.Done()
		defer w.pinning.Store(false)
		w.pin(c)
	}()
}

// pin takes a connection out of the pool with a PING (a go-redis Conn
// takes one at its first command), and keeps it if the PING is answered
// within a TTL.
func (w *warmConn) pin(c *Client) {
	ctx, cancel := context.WithTimeout(c.ctx, c.o.TTL)
	defer cancel()
	cn := w.rdb.Conn()
	err := cn.Ping(ctx).Err()
	w.mu.Lock()
	if err != nil || w.conn != nil {
		_ = cn.Close()
	} else {
		w.conn = cn
		w.pinned.Store(true)
	}
	w.unlock()
}

// unlock unlocks mu and, if Close came meanwhile, returns the connection
// to the pool: unpin cannot when it finds mu held.
func (w *warmConn) unlock() {
	w.mu.Unlock()
	if w.closed.Load() {
		w.unpin()
	}
}

// unpin returns w's connection to the pool for good (release). A renewal
// still running on it returns it when it ends.
func (w *warmConn) unpin() {
	w.closed.Store(true)
	if w.mu.TryLock() {
		w.dropLocked()
		w.mu.Unlock()
	}
}
