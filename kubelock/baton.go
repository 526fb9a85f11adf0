package kubelock

import (
	"context"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// connOf is c as package engine drives it.
func connOf(c *Client) batonConn {
	return batonConn{engine.NewRecipes(c.mutex, c.rwMutex, c.semaphore, c.election), c}
}

// batonConn is a Client as package engine drives it.
type batonConn struct {
	engine.Recipes
	c *Client
}

func (k batonConn) Engine() string { return "kube" }
func (k batonConn) Raw() any       { return k.c }
func (k batonConn) Close() error   { return k.c.close() }

// Inspect reads the name's Leases (Client.inspect) as baton.Inspection:
// holders with their token, owner, holder record, age and time left;
// waiters in the order they will be served, each with its ticket; a
// holder that is not baton's (a client-go LeaderElector) as a Foreign
// holder. Entries whose lease ran out as this client judges it are
// listed Dead: they hold (or wait) no more, and the next write of the
// name drops them.
func (k batonConn) Inspect(ctx context.Context, name string) (baton.Inspection, error) {
	in, err := k.c.inspect(ctx, name)
	if err != nil {
		return baton.Inspection{}, err
	}
	out := baton.Inspection{Name: name, Engine: "kube", Permits: in.Permits, Notes: in.Notes}
	for _, e := range in.Entries {
		be := baton.Entry{Mode: e.Kind, Token: e.Token, Owner: e.Owner, Process: e.Process,
			Age: e.Age, Left: e.Left, Dead: e.Expired, Foreign: e.Foreign}
		switch {
		case e.Foreign:
			be.Note = "holderIdentity written by another program (a client-go LeaderElector?)"
		case e.Expired && e.Waiting:
			be.Note = "waiter gone: its intent was not refreshed"
		case e.Expired:
			be.Note = "lease ran out: free to the next acquire"
		case e.ID != "":
			be.Note = "candidate " + e.ID
		}
		if e.Waiting {
			out.Waiters = append(out.Waiters, be)
		} else {
			out.Holders = append(out.Holders, be)
		}
	}
	return out, nil
}

var _ engine.Lister = batonConn{}

// Names is Client.Names, for programs that reach it through the Conn
// (engine.Power).
func (k batonConn) Names(ctx context.Context, prefix string) ([]string, error) {
	return k.c.Names(ctx, prefix)
}
