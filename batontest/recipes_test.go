package batontest_test

import (
	"context"

	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/queue"
)

// The adapters below turn baton's queue recipes, which zklock and etcdlock
// both return, into the suite's interfaces. They only convert types; every
// call goes straight to the engine.

// rwOf keeps a failed constructor's nil out of the interface.
func rwOf(m *queue.RWMutex, err error) (batontest.RW, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}

func semOf(s *queue.Semaphore, err error) (batontest.Sem, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

func electOf(e *queue.Election, err error) (batontest.Elect, error) {
	if err != nil {
		return nil, err
	}
	return election{e}, nil
}

// election adapts *queue.Election. A leader is named by its entry's key,
// unique to the entry.
type election struct{ e *queue.Election }

func (e election) Campaign(ctx context.Context) (batontest.Leadership, error) {
	ld, err := e.e.Campaign(ctx)
	if err != nil {
		return nil, err
	}
	return leader{ld}, nil
}

func (e election) Leader(ctx context.Context) (string, error) {
	c, err := e.e.Leader(ctx)
	return c.Entry, err
}

// Observe relays the engine's candidates as names. The relay goroutine is
// owned by ctx: it ends when the engine closes its channel, which it does
// when ctx ends.
func (e election) Observe(ctx context.Context) (<-chan string, error) {
	in, err := e.e.Observe(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan string)
	go func() {
		defer close(out)
		for c := range in {
			select {
			case out <- c.Entry:
			case <-ctx.Done():
				for range in { // let the engine's goroutine finish
				}
				return
			}
		}
	}()
	return out, nil
}

// leader adapts *queue.Leader.
type leader struct{ *queue.Leader }

func (l leader) Resign(ctx context.Context, p batontest.ResignPlan) error {
	return l.Leader.Resign(ctx, queue.ResignPlan{Drain: p.Drain, DrainTimeout: p.DrainTimeout, Checkpoint: p.Checkpoint})
}
