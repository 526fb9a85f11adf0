package sqllock

import (
	"context"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/fence"
)

// connOf is c as package engine drives it: New and baton.Open give it as
// the *baton.Client every engine gives, and baton.As hands c back, for
// Migrate, Prune, DB and Stats. Closing the *baton.Client closes c.
func connOf(c *Client) conn {
	return conn{engine.NewRecipes(c.mutex, c.rwMutex, c.semaphore, c.election), c}
}

// conn is a Client as package engine drives it.
type conn struct {
	engine.Recipes
	c *Client
}

func (k conn) Engine() string { return k.c.engine }
func (k conn) Raw() any       { return k.c }
func (k conn) Close() error   { return k.c.shutdown() }

// Inspect reads the lock's rows (inspectRows) as a baton.Inspection:
// the rows of a holder's kind are its Holders, the waiters' intent rows
// its Waiters in the order they will be served, each waiter's Token its
// ticket. A row whose lease ended on the database clock is listed Dead:
// it no longer holds (or waits), and the next acquire takes it over.
func (k conn) Inspect(ctx context.Context, name string) (baton.Inspection, error) {
	rows, err := k.c.inspectRows(ctx, name)
	if err != nil {
		return baton.Inspection{}, err
	}
	in := baton.Inspection{Name: name, Engine: k.c.engine}
	for _, r := range rows {
		e := baton.Entry{Mode: r.Recipe(), Token: r.Token, Owner: r.Owner, Process: r.Process, Left: r.Left}
		switch {
		case r.Waiting() && r.Left <= 0:
			e.Dead, e.Note = true, "waiter gone: its intent row was not refreshed"
		case r.Left <= 0:
			e.Dead, e.Note = true, "lease expired on the database clock: free to the next acquire"
		}
		if r.Waiting() {
			in.Waiters = append(in.Waiters, e)
			continue
		}
		in.Holders = append(in.Holders, e)
		if n, ok := queuekit.ParsePermits([]byte(r.data)); ok && r.Kind == kindPermit && !e.Dead {
			in.Permits = n
		}
	}
	if k.c.q.d == fence.SQLite {
		in.Notes = append(in.Notes, "mutex waiters keep no row on SQLite (every write waits for the file lock), so they are not listed")
	}
	return in, nil
}
