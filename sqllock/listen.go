package sqllock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/jackc/pgx/v5/stdlib"
)

// A process keeps ONE PostgreSQL connection LISTENing per database server
// and table, shared by every Client on them: a dedicated connection per
// Client would double the connections of a process with many clients (and
// exhaust max_connections in a test that runs fifty). The connection is
// taken from the *sql.DB of one registered Client for as long as it lives;
// when that Client closes, the listener moves to another one's. Each
// notification's payload is a released name; the listener wakes that
// name's watchers and its oldest mutex waiter in this process through
// processHub (see wake.go). Notifications are a hint: waiters also poll,
// so a lost notification or a listener that is down only delays a grant.

// listenerSet is the shared listener of one server and table. Its
// goroutine is owned by the set: the last unregister stops it and waits.
type listenerSet struct {
	id      string
	channel string

	mu       sync.Mutex
	clients  map[*Client]struct{}
	using    *Client            // whose *sql.DB the live connection came from
	dropConn context.CancelFunc // ends the live connection (hand-over)
	connDone chan struct{}      // closed when the live connection is given back

	stop context.CancelFunc
	done chan struct{}
}

var listeners = struct {
	mu   sync.Mutex
	sets map[string]*listenerSet
}{sets: make(map[string]*listenerSet)}

// register adds c to the listener of id, starting it if it is the first.
func register(c *Client, id string) {
	listeners.mu.Lock()
	defer listeners.mu.Unlock()
	ls := listeners.sets[id]
	if ls == nil {
		ctx, stop := context.WithCancel(context.Background())
		ls = &listenerSet{id: id, channel: c.q.locks, clients: make(map[*Client]struct{}), stop: stop, done: make(chan struct{})}
		listeners.sets[id] = ls
		ls.clients[c] = struct{}{}
		go ls.run(ctx)
		return
	}
	ls.mu.Lock()
	ls.clients[c] = struct{}{}
	ls.mu.Unlock()
}

// unregister removes c; if the live connection is c's, it is given back
// before unregister returns; the last client stops the listener.
func unregister(c *Client, id string) {
	listeners.mu.Lock()
	ls := listeners.sets[id]
	if ls == nil {
		listeners.mu.Unlock()
		return
	}
	ls.mu.Lock()
	delete(ls.clients, c)
	last := len(ls.clients) == 0
	if last {
		delete(listeners.sets, id)
	}
	var wait chan struct{}
	if ls.using == c {
		ls.dropConn()
		wait = ls.connDone
	}
	ls.mu.Unlock()
	listeners.mu.Unlock()
	if last {
		ls.stop()
		<-ls.done
		return
	}
	if wait != nil {
		<-wait
	}
}

// run keeps a LISTEN connection up until stopped, reconnecting with
// backoff through whichever registered client is available.
func (ls *listenerSet) run(ctx context.Context) {
	defer close(ls.done)
	var b baton.Backoff
	for attempt := 0; ; attempt++ {
		ls.mu.Lock()
		var c *Client
		for k := range ls.clients {
			c = k
			break
		}
		if c == nil || ctx.Err() != nil {
			ls.mu.Unlock()
			return
		}
		cctx, drop := context.WithCancel(ctx)
		ls.using, ls.dropConn, ls.connDone = c, drop, make(chan struct{})
		done := ls.connDone
		ls.mu.Unlock()

		listened, err := ls.listenOnce(cctx, c.db)
		handover := cctx.Err() != nil && ctx.Err() == nil
		drop()
		ls.mu.Lock()
		ls.using = nil
		close(done)
		ls.mu.Unlock()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errNotPgx):
			<-ctx.Done() // lib/pq or another driver: backoff only
			return
		case handover:
			attempt = -1
			continue
		case listened:
			attempt = 0 // it worked for a while: start the backoff over
		}
		t := time.NewTimer(b.Delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

var errNotPgx = errors.New("sqllock: not a pgx connection: waiters wake by backoff only")

// listenOnce LISTENs on one connection of db until it fails or ctx ends.
// listened reports whether LISTEN succeeded (a later failure retries at
// once).
func (ls *listenerSet) listenOnce(ctx context.Context, db *sql.DB) (listened bool, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	h := &tableHub{id: ls.id}
	_ = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			err = errNotPgx
			return nil // untouched: back to the pool
		}
		pc := sc.Conn()
		if _, err = pc.Exec(ctx, `LISTEN "`+ls.channel+`"`); err != nil {
			return driver.ErrBadConn
		}
		listened = true
		// Releases in this process now leave their mutex waiter to the
		// NOTIFY; releases while nobody listened were missed: let every
		// waiter retry once.
		h.setListening(true)
		defer h.setListening(false)
		h.wakeAll()
		// The wait runs on a context that cannot end, and ctx's end cuts
		// it through the connection's deadline, as pgx's own watcher
		// would: pgx watches a context that can end anew at every wait,
		// four allocations per notification received.
		stop := context.AfterFunc(ctx, func() { _ = pc.PgConn().Conn().SetDeadline(time.Unix(1, 0)) })
		defer stop()
		for {
			n, werr := pc.WaitForNotification(context.Background())
			if werr == nil && ctx.Err() != nil {
				werr = ctx.Err()
			}
			if werr != nil {
				err = werr
				// A LISTENing connection must never go back to the pool.
				return driver.ErrBadConn
			}
			h.wake(n.Payload)
		}
	})
	return listened, err
}
