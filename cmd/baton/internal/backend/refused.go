package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// markUnavailable marks err with baton.ErrUnavailable unless it is marked
// already (baton.ErrAuth or baton.ErrUnavailable).
func markUnavailable(err error) error {
	if errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
}

// containsAny reports whether s contains one of subs.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
