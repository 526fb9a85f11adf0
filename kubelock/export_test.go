package kubelock

import (
	"context"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// NewClient is New returning the engine's own client, whose recipes,
// inspection and keeper the tests drive directly.
var NewClient = newClient

// The recipe and inspection types, under the names the tests use.
type (
	Mutex      = kubeMutex
	RWMutex    = kubeRWMutex
	Semaphore  = kubeSemaphore
	Election   = kubeElection
	Inspection = leaseInspection
	Entry      = leaseEntry
)

// Baton is the *baton.Client New would have returned for c.
func (c *Client) Baton() *baton.Client { return engine.NewClient(connOf(c)) }

func (c *Client) Mutex(name string) (*Mutex, error)                { return c.mutex(name) }
func (c *Client) RWMutex(name string) (*RWMutex, error)            { return c.rwMutex(name) }
func (c *Client) Semaphore(name string, n int) (*Semaphore, error) { return c.semaphore(name, n) }
func (c *Client) Election(name string) (*Election, error)          { return c.election(name) }
func (c *Client) Inspect(ctx context.Context, name string) (Inspection, error) {
	return c.inspect(ctx, name)
}
func (c *Client) Entries(ctx context.Context, name string) ([]string, error) {
	return c.entries(ctx, name)
}
func (c *Client) LeaseName(name string) (string, error) { return c.leaseName(name) }
func (c *Client) Close() error                          { return c.close() }
func (c *Client) Namespace() string                     { return c.ns }

// Intent is a waiting intent as a Lease stores it.
type Intent struct {
	Stamp uint64        // one, plus one per refresh
	TTL   time.Duration // its lease time
}

// Intents decodes the waiting intents of lock's Lease l.
func Intents(lock string, l *coordv1.Lease) ([]Intent, error) {
	v, err := decode(lock, l)
	if err != nil {
		return nil, err
	}
	out := make([]Intent, len(v.st.Waiters))
	for i, e := range v.st.Waiters {
		out[i] = Intent{Stamp: e.Stamp, TTL: e.ttl()}
	}
	return out, nil
}
