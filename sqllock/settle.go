package sqllock

import (
	"context"

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
func (c *Client) settle(ctx context.Context, endless bool, stmt func(context.Context) attempt, late func(attempt)) (attempt, bool) {
	if c.inPlace(ctx, endless) || !c.startSettling() {
		return stmt(ctx), true
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.attemptTimeout())
	stop := context.AfterFunc(c.ctx, cancel)
	done, gaveUp := make(chan attempt), make(chan struct{})
	go func() { // owned by the Client (settling); ends with sctx at the latest
		defer c.settling.Done()
		a := stmt(sctx)
		stop()
		cancel()
		select {
		case done <- a:
		case <-gaveUp:
			late(a)
		}
	}()
	select {
	case a := <-done:
		return a, true
	case <-ctx.Done():
		close(gaveUp)
		return attempt{}, false
	}
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
