package etcdlock

import (
	"context"

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

func (k conn) Engine() string { return "etcd" }
func (k conn) Raw() any       { return k.c }
func (k conn) Close() error   { return k.c.close() }

// Inspect reads the lock's keys as Client.Inspect does, with what the one
// shape holds beyond queuekit.EntryInfo: each entry's Left, its lease's time
// to live on the server, and a semaphore's N as its leases store it.
func (k conn) Inspect(ctx context.Context, name string) (baton.Inspection, error) {
	r, err := k.c.inspect(ctx, name)
	if err != nil {
		return baton.Inspection{}, err
	}
	in := queuekit.Inspection(name, "etcd", r.entries)
	in.Permits = r.permits["leases/"]
	lease := make(map[string]string, len(r.entries)) // entry → its lease
	for _, e := range r.entries {
		lease[e.Entry] = e.Session
	}
	for _, list := range [][]baton.Entry{in.Holders, in.Waiters, in.Other} {
		for i := range list {
			list[i].Left = r.left[lease[list[i].Owner]]
		}
	}
	return in, nil
}
