package baton

import (
	"context"
	"fmt"

	"github.com/baton-go/baton/internal/bridge"
)

// Client is a connection to one engine, the same type on every engine:
// code written against *Client runs on ZooKeeper, etcd, Redis, Redlock,
// PostgreSQL, MySQL, SQLite and, in unit tests, on memlock. Get one from
// Open with a URL, or from an engine's constructor with a client of your
// own (redislock.New takes a go-redis client, sqllock.New a *sql.DB, …).
//
// Its methods are safe for concurrent use. The lock objects it returns
// are cheap: make one per name and keep it, or make one per use.
type Client struct {
	c      conn
	engine string
}

// conn is what package engine hands the root: an engine.Conn behind an
// adapter whose methods use only this package's types and any.
type conn interface {
	Mutex(name string) (Locker, error)
	RW(name string) (any, error)
	Sem(name string, n int) (any, error)
	Election(name string) (Elector, error)
	Inspect(ctx context.Context, name string) (Inspection, error)
	Raw() any
	Close() error
}

func init() {
	bridge.NewClient = func(c any, engine string) any { return &Client{c: c.(conn), engine: engine} }
}

// Engine names the engine: "zk", "etcd", "redis", "redlock", "postgres",
// "mysql", "sqlite" or "mem".
func (c *Client) Engine() string { return c.engine }

// Close ends the client's session(s) and stops its goroutines. Leases
// still held end as their engine ends them on close (released, or lost
// when the release cannot reach the server). A second Close returns nil
// or an error wrapping ErrClosed.
func (c *Client) Close() error { return c.c.Close() }

// Mutex returns the exclusive lock called name. An invalid name fails
// with an error wrapping ErrInvalidName; a closed client with ErrClosed.
func (c *Client) Mutex(name string) (*Mutex, error) {
	l, err := c.c.Mutex(name)
	if err != nil {
		return nil, err
	}
	return &Mutex{name: name, l: l}, nil
}

// RWMutex returns the read/write lock called name. Redlock has none: it
// fails there with an error wrapping ErrInvalidOption.
func (c *Client) RWMutex(name string) (*RWMutex, error) {
	v, err := c.c.RW(name)
	if err != nil {
		return nil, err
	}
	rw, ok := v.(rwLocker)
	if !ok {
		return nil, fmt.Errorf("%w: the %s engine's read/write lock is %T", ErrInvalidOption, c.engine, v)
	}
	return &RWMutex{name: name, rw: rw}, nil
}

// Semaphore returns the semaphore called name with n permits (n ≥ 1, else
// ErrInvalidOption). Every client of one semaphore must give the same n;
// the engines that can tell report a disagreement in the holder's events.
func (c *Client) Semaphore(name string, n int) (*Semaphore, error) {
	v, err := c.c.Sem(name, n)
	if err != nil {
		return nil, err
	}
	s, ok := v.(semLocker)
	if !ok {
		return nil, fmt.Errorf("%w: the %s engine's semaphore is %T", ErrInvalidOption, c.engine, v)
	}
	return &Semaphore{name: name, n: n, s: s}, nil
}

// Election returns the leader election called name.
func (c *Client) Election(name string) (*Election, error) {
	e, err := c.c.Election(name)
	if err != nil {
		return nil, err
	}
	return &Election{name: name, e: e}, nil
}

// Inspect reads who holds and who waits for the lock called name, as the
// engine stores it: the same Inspection on every engine. It is a
// snapshot, and it takes nothing.
func (c *Client) Inspect(ctx context.Context, name string) (Inspection, error) {
	return c.c.Inspect(ctx, name)
}

// As returns what only one engine can do, as T. v is a *Client, and T
// the engine's own client (*redislock.Client for its Stats,
// *zklock.Client for its session, *sqllock.Client for Migrate and Prune)
// or an interface it implements; or v is a *Mutex, *RWMutex, *Semaphore
// or *Election, and T an interface of the engine's lock object (the lease
// engines' LockFor, a semaphore's OnDisagreement, Redis's Key). ok is
// false when the engine has no such thing, or v is none of those types.
// Like database/sql's Conn.Raw and gocloud's As, it reaches one engine's
// powers without a type switch over engines the caller does not know.
func As[T any](v any) (T, bool) {
	var zero T
	var r any
	switch v := v.(type) {
	case *Client:
		if t, ok := v.c.Raw().(T); ok {
			return t, true
		}
		r = v.c
	case *Mutex:
		r = v.l
	case *RWMutex:
		r = v.rw
	case *Semaphore:
		r = v.s
	case *Election:
		r = v.e
	default:
		return zero, false
	}
	t, ok := r.(T)
	return t, ok
}
