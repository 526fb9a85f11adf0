// Package engine is what a baton engine implements, and nothing a user of
// baton calls: the database/sql/driver of package baton. An engine
// implements Conn over its store and registers the URL schemes it opens;
// package baton turns a Conn into the *baton.Client every user sees, so
// that code written against *baton.Client runs on every engine.
//
// An engine's package has three parts: its store operations (the wire
// layout, scripts or SQL), a Conn built on one of baton's recipe kits
// (package queuekit for engines whose locks are ordered queues of session
// entries, package leasekit for engines whose locks are entries with a
// TTL), and an init that registers its schemes:
//
//	func init() { engine.Register(open, "redis", "rediss") }
//
//	func open(ctx context.Context, cfg engine.Config) (engine.Conn, error) {
//		… parse cfg.URL, dial, return the Conn …
//	}
//
// Its constructor over the user's own client returns engine.NewClient(c).
package engine

import (
	"context"
	"fmt"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/bridge"
)

// Conn is one connected engine client, as package baton drives it. Its
// methods must be safe for concurrent use.
type Conn interface {
	// Engine names the engine: "zk", "etcd", "redis", "postgres", …
	Engine() string
	// Mutex returns the exclusive lock called name; an invalid name fails
	// with an error wrapping baton.ErrInvalidName.
	Mutex(name string) (baton.Locker, error)
	// RWMutex returns the read/write lock called name. An engine without
	// one returns an error wrapping baton.ErrInvalidOption.
	RWMutex(name string) (RWLocker, error)
	// Semaphore returns the semaphore called name with n permits, or an
	// error as RWMutex does.
	Semaphore(name string, n int) (SemLocker, error)
	// Election returns the election called name, or an error as RWMutex
	// does.
	Election(name string) (baton.Elector, error)
	// Inspect reads the holders, waiters and strays of the lock called
	// name, each with the Process the grant recorded (ParseProcess).
	Inspect(ctx context.Context, name string) (baton.Inspection, error)
	// Raw returns the engine's own client (*redislock.Client, …), which
	// baton.As hands to users who need what only this engine does.
	Raw() any
	// Close ends the client's sessions and goroutines.
	Close() error
}

// RWLocker is a read/write lock of an engine.
type RWLocker interface {
	baton.Locker
	RLock(ctx context.Context) (*baton.Lease, error)
	TryRLock(ctx context.Context) (*baton.Lease, error)
}

// SemLocker is a semaphore of an engine.
type SemLocker interface {
	Acquire(ctx context.Context) (*baton.Lease, error)
	TryAcquire(ctx context.Context) (*baton.Lease, error)
}

// NewClient returns the *baton.Client users hold for c. An engine's
// constructor over the user's own client ends with it.
func NewClient(c Conn) *baton.Client {
	return bridge.NewClient(adapter{c}, c.Engine()).(*baton.Client)
}

// adapter gives package baton a Conn in the root's own types: the root
// cannot name RWLocker or SemLocker, so those come back as any.
type adapter struct{ Conn }

func (a adapter) RW(name string) (any, error) {
	rw, err := a.Conn.RWMutex(name)
	if err != nil {
		return nil, err
	}
	return rw, nil
}

func (a adapter) Sem(name string, n int) (any, error) {
	s, err := a.Conn.Semaphore(name, n)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Recipe returns a recipe constructor's result as the interface I that
// Conn's methods return, and a nil I when err is set: a typed nil pointer
// in an interface would not compare equal to nil.
func Recipe[I, T any](v T, err error) (I, error) {
	var zero I
	if err != nil {
		return zero, err
	}
	i, ok := any(v).(I)
	if !ok {
		panic("engine.Recipe: " + typeName(v) + " does not implement the recipe interface")
	}
	return i, nil
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
