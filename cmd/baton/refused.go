package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-go/baton"
)

// refusalMarker returns err marked with baton.ErrAuth when it is an
// engine's refusal (for example a Redis ACL's NOPERM), else err as it is.
type refusalMarker func(err error) error

// markRefusal wraps err with baton.ErrAuth when refused says it is a
// refusal and it is not marked yet.
func markRefusal(err error, refused func(string) bool) error {
	if err == nil || errors.Is(err, baton.ErrAuth) || !refused(err.Error()) {
		return err
	}
	return fmt.Errorf("%w: %w", baton.ErrAuth, err)
}

// refusingLocker is a Locker whose acquire errors pass through mark: a
// server may accept the connection and refuse only the lock's own keys
// (an ACL limited to other keys), which must exit 77, not 69.
type refusingLocker struct {
	baton.Locker
	mark refusalMarker
}

func (l refusingLocker) Lock(ctx context.Context) (*baton.Lease, error) {
	lease, err := l.Locker.Lock(ctx)
	return lease, l.mark(err)
}

func (l refusingLocker) TryLock(ctx context.Context) (*baton.Lease, error) {
	lease, err := l.Locker.TryLock(ctx)
	return lease, l.mark(err)
}

// refusingElector is refusingLocker's twin for elections.
type refusingElector struct {
	baton.Elector
	mark refusalMarker
}

func (e refusingElector) Campaign(ctx context.Context) (*baton.Leader, error) {
	ld, err := e.Elector.Campaign(ctx)
	return ld, e.mark(err)
}

func (e refusingElector) CampaignAs(ctx context.Context, id string) (*baton.Leader, error) {
	ld, err := e.Elector.CampaignAs(ctx, id)
	return ld, e.mark(err)
}

func (e refusingElector) Leader(ctx context.Context) (baton.Candidate, error) {
	c, err := e.Elector.Leader(ctx)
	return c, e.mark(err)
}

// refusing wraps a backend's locker and election constructors so that
// their errors pass through mark.
func refusing(b *backend, mark refusalMarker) *backend {
	locker, election := b.locker, b.election
	b.locker = func(name string, mode lockMode, permits int) (baton.Locker, error) {
		l, err := locker(name, mode, permits)
		if err != nil {
			return nil, mark(err)
		}
		return refusingLocker{Locker: l, mark: mark}, nil
	}
	b.election = func(name string) (baton.Elector, error) {
		e, err := election(name)
		if err != nil {
			return nil, mark(err)
		}
		return refusingElector{Elector: e, mark: mark}, nil
	}
	return b
}
