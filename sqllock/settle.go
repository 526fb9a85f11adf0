package sqllock

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/baton-go/baton/fence"
)

// A mutex attempt's statement is not cut short when its acquire's context
// ends: the attempt returns at once, but the statement runs on and what it
// did is freed once it is known. Cancelling a sent statement closes the
// connection (pgx, go-sql-driver/mysql; pgx's cancel request follows on a
// connection of its own and may come too late): the server may still run
// it, after the owner-checked release meant to free its grant found
// nothing to free, and after another client took and freed the lock. That
// grant then stayed, neither held nor renewed: the lock was taken for a
// TTL and its row listed until someone took it over. The statement is
// still bounded by the attempt timeout and by Close. SQLite runs in this
// process: its statements stop before their call returns.

// attempt is the outcome of one attempt's statement.
type attempt struct {
	tok uint64
	ok  bool
	err error
}

// settle runs stmt on a context that ctx's end does not reach, and
// returns its outcome and true, or false as soon as ctx ends first; then
// late gets the outcome once the statement is done, on the goroutine
// that ran it, which Close waits for. An endless acquire's ctx ends only
// at the attempt timeout or at Close, which bound the statement anyway:
// it runs in place, without a goroutine and its two hand-offs (14% of an
// uncontended PostgreSQL lock+unlock).
//
// The statement's context is the engine's detached one (the attempts'
// shared context of the slot, with ctx's values), and the goroutine's
// state is a pooled settler: a timer, a deadline context, an AfterFunc
// on the client's context and two channels per attempt were ten of the
// allocations of a lock under a context that can end. The goroutine is a
// worker of the Client's pool, which keeps its grown stack (see gopool).
func (c *Client) settle(ctx context.Context, endless bool, stmt func(context.Context) attempt, late func(attempt)) (attempt, bool) {
	if c.inPlace(ctx, endless) || !c.startSettling() {
		return stmt(ctx), true
	}
	s := settlers.Get().(*settler)
	s.c, s.stmt, s.late, s.ctx = c, stmt, late, c.eng.Detached(ctx)
	s.state.Store(running)
	c.pool.Go(s.run) // owned by the Client (settling); ends with s.ctx at the latest
	select {
	case a := <-s.done:
		s.free()
		return a, true
	case <-ctx.Done():
		if s.state.CompareAndSwap(running, gaveUp) {
			return attempt{}, false // s is run's now
		}
		a := <-s.done // answered as ctx ended: the answer is on its way
		s.free()
		return a, true
	}
}

// settler is one settling statement's state, reused through settlers.
type settler struct {
	c     *Client
	stmt  func(context.Context) attempt
	late  func(attempt)
	ctx   context.Context
	state atomic.Int32 // running, answered or gaveUp
	done  chan attempt // buffered: run never blocks on it
}

// The states of a settler: the statement runs; run handed its outcome
// to settle; settle stopped waiting, and run gives the outcome to late.
const (
	running int32 = iota
	answered
	gaveUp
)

var settlers = sync.Pool{New: func() any { return &settler{done: make(chan attempt, 1)} }}

// run is the goroutine of a settling statement. Whoever settles the
// state last owns s: settle after an answer, run after settle gave up.
func (s *settler) run() {
	c := s.c
	defer c.settling.Done()
	a := s.stmt(s.ctx)
	if s.state.CompareAndSwap(running, answered) {
		s.done <- a
		return // s is settle's now: not touched again
	}
	late := s.late
	s.free()
	late(a)
}

// free clears s and returns it to settlers.
func (s *settler) free() {
	s.c, s.stmt, s.late, s.ctx = nil, nil, nil, nil
	settlers.Put(s)
}

// startSettling counts a settling statement in, unless the client is
// closed (Close waits for those counted).
func (c *Client) startSettling() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.settling.Add(1)
	return true
}

// inPlace reports whether settle runs a statement under ctx on the
// caller's goroutine: on SQLite, or when the acquire's context cannot
// end (endless, or ctx itself). Callers test it before building the
// closures settle takes.
func (c *Client) inPlace(ctx context.Context, endless bool) bool {
	return c.q.d == fence.SQLite || endless || ctx.Done() == nil
}
