package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
)

// raw returns the *redlock.Client of a *baton.Client or a
// *redlocktest.Proxied (baton.As).
func raw(c any) *redlock.Client {
	if p, ok := c.(*redlocktest.Proxied); ok {
		c = p.Client
	}
	return redlock.Raw(c.(*baton.Client))
}

// entries lists name's entries through admin or stops the test.
func entries(t testing.TB, admin *baton.Client, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	es, err := redlock.Entries(ctx, admin, name)
	if err != nil {
		t.Fatalf("Entries(%q) = %v", name, err)
	}
	return es
}

// awaitNoEntries waits up to d for name to have no entry on any node.
func awaitNoEntries(t testing.TB, admin *baton.Client, name string, d time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		es := entries(t, admin, name)
		if len(es) == 0 || time.Now().After(deadline) {
			return es
		}
		time.Sleep(20 * time.Millisecond)
	}
}
