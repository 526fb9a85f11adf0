package etcdlock

import (
	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

// Backend returns the queuekit.Backend the client's recipes run on, so tests
// can drive sessions directly.
func (c *Client) Backend() queuekit.Backend { return backend{c} }

// NewClient is New returning the engine's own client, whose recipes the
// tests drive directly (their queuekit types, their keys).
var NewClient = newClient

// Baton is the *baton.Client New would have returned for c.
func (c *Client) Baton() *baton.Client { return engine.NewClient(connOf(c)) }

func (c *Client) Mutex(name string) (*queuekit.Mutex, error)     { return c.mutex(name) }
func (c *Client) RWMutex(name string) (*queuekit.RWMutex, error) { return c.rwMutex(name) }
func (c *Client) Semaphore(name string, n int) (*queuekit.Semaphore, error) {
	return c.semaphore(name, n)
}
func (c *Client) Election(name string) (*queuekit.Election, error) { return c.election(name) }
func (c *Client) Close() error                                     { return c.close() }
func (c *Client) Engine() string                                   { return "etcd" }
