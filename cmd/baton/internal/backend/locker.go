package backend

import (
	"context"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

// Mode is the coordination object `run` takes: a mutex by default, a
// side of a read/write lock, or a semaphore's permit. They are different
// objects: use different names for them.
type Mode int

const (
	ModeMutex  Mode = iota // plain run
	ModeRead               // --read: shared side of the RW lock NAME
	ModeWrite              // --write: exclusive side of the RW lock NAME
	ModeShared             // --shared N: one of N permits of the semaphore NAME
)

// Locker returns the Locker of mode on name, from the engine's own
// recipes: the mutex, a side of the read/write lock, or the semaphore
// (each Lock is one permit of permits; a disagreeing N is noted). Its
// errors, and its acquires', are marked as the engine's refusals where
// they are.
func (b *Backend) Locker(name string, mode Mode, permits int) (baton.Locker, error) {
	l, err := b.pick(name, mode, permits)
	if err != nil {
		return nil, b.mark(err)
	}
	if b.pw.refused != nil {
		return refusingLocker{Locker: l, mark: b.mark}, nil
	}
	return l, nil
}

// Election returns the election called name, its errors marked as
// Locker's are.
func (b *Backend) Election(name string) (baton.Elector, error) {
	e, err := b.conn.Election(name)
	if err != nil {
		return nil, b.mark(err)
	}
	if b.pw.refused != nil {
		return refusingElector{Elector: e, mark: b.mark}, nil
	}
	return e, nil
}

func (b *Backend) pick(name string, mode Mode, permits int) (baton.Locker, error) {
	switch mode {
	case ModeRead, ModeWrite:
		rw, err := b.conn.RWMutex(name)
		if err != nil || mode == ModeWrite {
			return rw, err
		}
		return readSide{rw}, nil
	case ModeShared:
		s, err := b.conn.Semaphore(name, permits)
		if err != nil {
			return nil, err
		}
		b.onDisagreement(s)
		return permit{s}, nil
	}
	return b.conn.Mutex(name)
}

// onDisagreement notes the leases of s's semaphore taken with another N,
// where the engine tells them (both recipe kits do, with one type).
func (b *Backend) onDisagreement(s engine.SemLocker) {
	type teller interface {
		OnDisagreement(func(queuekit.Disagreement))
	}
	if s, ok := s.(teller); ok {
		s.OnDisagreement(func(d queuekit.Disagreement) { b.env.Note("%v", d) })
	}
}

// mark marks err as a refusal when the engine tells it is one.
func (b *Backend) mark(err error) error {
	if b.pw.refused == nil {
		return err
	}
	return markRefusal(err, b.pw.refused)
}

// readSide is the read side of a read/write lock as a Locker.
type readSide struct{ rw engine.RWLocker }

func (r readSide) Lock(ctx context.Context) (*baton.Lease, error)    { return r.rw.RLock(ctx) }
func (r readSide) TryLock(ctx context.Context) (*baton.Lease, error) { return r.rw.TryRLock(ctx) }

// permit is a semaphore as a Locker: each Lock is one permit.
type permit struct{ s engine.SemLocker }

func (p permit) Lock(ctx context.Context) (*baton.Lease, error)    { return p.s.Acquire(ctx) }
func (p permit) TryLock(ctx context.Context) (*baton.Lease, error) { return p.s.TryAcquire(ctx) }
