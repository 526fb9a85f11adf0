package zklock

import (
	"context"
	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"

	"github.com/baton-go/baton/engine/queuekit"
)

// RecoverCreate runs protected-create recovery for the attempt uuid in the
// lock directory of name, on the client's current session.
func (c *Client) RecoverCreate(ctx context.Context, name, uuid string) (queuekit.Entry, bool, error) {
	s, err := c.session(ctx)
	if err != nil {
		return queuekit.Entry{}, false, err
	}
	dir, err := c.dirPath(name)
	if err != nil {
		return queuekit.Entry{}, false, err
	}
	return s.recoverCreate(ctx, name, dir, protectedPrefix+uuid+"-")
}

// NewUUID exposes the protected-create UUID generator.
var NewUUID = newUUID

// Watches returns how many data watches the current session keeps for
// its waiters.
func (c *Client) Watches() int {
	c.mu.Lock()
	s := c.cur
	c.mu.Unlock()
	if s == nil {
		return 0
	}
	return s.watches.size()
}

// RecheckMissing runs Inspect's recheck of sessions missing from live on
// a client of servers (only their four-letter words are used), for
// entries of the sessions given; it returns live as completed.
func RecheckMissing(ctx context.Context, servers, sessions []string, live map[string]bool) map[string]bool {
	out := make([]queuekit.EntryInfo, len(sessions))
	for i, s := range sessions {
		out[i].Session = s
	}
	(&Client{servers: servers}).recheckMissing(ctx, out, live)
	return live
}

// DialClient is Dial returning the engine's own client, whose recipes the
// tests drive directly (their queuekit types, their entries).
var DialClient = dial

// Baton is the *baton.Client Dial would have returned for c.
func (c *Client) Baton() *baton.Client { return engine.NewClient(connOf(c)) }

func (c *Client) Mutex(name string) (*queuekit.Mutex, error)     { return c.mutex(name) }
func (c *Client) RWMutex(name string) (*queuekit.RWMutex, error) { return c.rwMutex(name) }
func (c *Client) Semaphore(name string, n int) (*queuekit.Semaphore, error) {
	return c.semaphore(name, n)
}
func (c *Client) Election(name string) (*queuekit.Election, error) { return c.election(name) }
func (c *Client) Close() error                                     { return c.close() }
func (c *Client) Engine() string                                   { return "zk" }
