package zklock

import (
	"context"
	"strings"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

// connOf is c as package engine drives it.
func connOf(c *Client) conn {
	return conn{engine.NewRecipes(c.mutex, c.rwMutex, c.semaphore, c.election), c}
}

// conn is a Client as package engine drives it.
type conn struct {
	engine.Recipes
	c *Client
}

func (k conn) Engine() string { return "zk" }
func (k conn) Raw() any       { return k.c }
func (k conn) Close() error   { return k.c.close() }

// Inspect reads the lock as Client.Inspect does, in baton's terms. A
// semaphore's guard entries ("locks/…") are acquirers waiting their turn
// to take a lease, so they come after the leases and hold nothing, even
// the guard's head (which the raw listing marks as holding the guard).
func (k conn) Inspect(ctx context.Context, name string) (baton.Inspection, error) {
	es, permits, err := k.c.inspect(ctx, name)
	if err != nil {
		return baton.Inspection{}, err
	}
	in := queuekit.Inspection(name, "zk", servingOrder(es))
	in.Permits = permits
	return in, nil
}

// servingOrder moves a semaphore's guard entries after the other entries,
// as waiters: its leases are served first (the guard's head already has
// its lease, or is about to create it), then the guard queue in order.
func servingOrder(es []queuekit.EntryInfo) []queuekit.EntryInfo {
	out := make([]queuekit.EntryInfo, 0, len(es))
	var guard []queuekit.EntryInfo
	for _, e := range es {
		if !strings.HasPrefix(e.Entry, "locks/") {
			out = append(out, e)
			continue
		}
		if e.Holder {
			e.Holder = false
			e.AddNote("holds the semaphore's guard: takes the next free permit")
		} else {
			e.AddNote("waits for the semaphore's guard")
		}
		guard = append(guard, e)
	}
	return append(out, guard...)
}
