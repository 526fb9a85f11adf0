package redislock

import (
	"context"
	"errors"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// connOf is c as package engine drives it, the Conn behind the
// *baton.Client New and Open return: its Close closes c, and the redis
// client only when Open made it (closeRDB set); baton.As hands c back, for
// Stats, Prefix and TTL.
func connOf(c *Client, closeRDB func() error) batonConn {
	return batonConn{engine.NewRecipes(c.mutex, c.rwMutex, c.semaphore, c.election), c, closeRDB}
}

// batonConn is a Client as package engine drives it.
type batonConn struct {
	engine.Recipes
	c *Client
	// closeRDB closes the redis client that Open made for c; nil when the
	// caller owns it.
	closeRDB func() error
}

func (k batonConn) Engine() string { return "redis" }
func (k batonConn) Raw() any       { return k.c }

// Close closes the client, then the redis client Open made for it.
func (k batonConn) Close() error {
	err := k.c.close()
	if k.closeRDB == nil || errors.Is(err, baton.ErrClosed) {
		return err
	}
	return errors.Join(err, k.closeRDB())
}

// waitingNote explains a waiter's entry: an intent the waiter refreshes at
// every attempt, not a place it keeps by itself.
const waitingNote = "waiting intent: expires unless the waiter retries"

// Inspect reads the name's entries (Client.inspect) as baton.Inspection:
// holders with their token, owner, holder record and time left; waiters
// with the time their intent has left.
func (k batonConn) Inspect(ctx context.Context, name string) (baton.Inspection, error) {
	in, err := k.c.inspect(ctx, name)
	if err != nil {
		return baton.Inspection{}, err
	}
	out := baton.Inspection{Name: name, Engine: "redis", Permits: in.Permits}
	for _, e := range in.Entries {
		be := baton.Entry{Mode: e.Recipe, Owner: e.Owner, Process: e.Process, Left: e.TTL}
		if e.Role != "holder" {
			be.Note = waitingNote
			out.Waiters = append(out.Waiters, be)
			continue
		}
		be.Token = e.Token
		if e.ID != "" {
			be.Note = "candidate " + e.ID
		}
		out.Holders = append(out.Holders, be)
	}
	return out, nil
}
