package bridge

import (
	"context"
	"time"
)

// Grant is engine.Grant as the root reads it; Observer is a
// baton.Observer.
type Grant struct {
	Name, Engine string
	Token        uint64
	Owner        string
	Key          any
	Release      func(ctx context.Context) error
	OnEnd        func()
	Observer     any
	Recipe       string
	Session      string
	Acquire      uint64
}

// The lease's engine side, installed by the root at init. A lease and a
// leader travel as any: each holds a *baton.Lease or *baton.Leader.
var (
	NewLease      func(parent context.Context, g Grant) any
	Suspend       func(lease any)
	Resume        func(lease any)
	LoseAhead     func(lease any, cause error, lead time.Duration) bool
	ReleaseFailed func(lease any, err error) bool
	Reenter       func(ctx context.Context, key any) (lease any, err error)
	Holding       func(ctx context.Context, key any) (lease any, ok bool)
	NewLeader     func(lease any, id string) any
)
