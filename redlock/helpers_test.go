package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
)

// entries lists name's entries through admin or stops the test.
func entries(t testing.TB, admin *redlock.Client, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	es, err := admin.Entries(ctx, name)
	if err != nil {
		t.Fatalf("Entries(%q) = %v", name, err)
	}
	return es
}

// awaitNoEntries waits up to d for name to have no entry on any node.
func awaitNoEntries(t testing.TB, admin *redlock.Client, name string, d time.Duration) []string {
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

// The conformance clients' lease time and node timeout: twice the other
// tests'. The suite's fifty contending clients, each behind five fault
// proxies in this one -race process, can starve it for longer than the
// shared 400ms node timeout on a loaded two-core machine; every attempt
// then times out, its connection is redialled, and no one is granted.
const (
	conformanceTTL         = 2 * redlocktest.TTL
	conformanceNodeTimeout = 1 * time.Second
)

// suiteEngine describes the Redlock engine on the five test nodes to the
// conformance suite.
func suiteEngine(t *testing.T) batontest.Engine {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	admin := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})
	return batontest.Engine{
		Name: "redlock",
		NewClient: func(t testing.TB) batontest.Client {
			ps := redlocktest.Proxies(t, addrs)
			c, err := redlock.New(redlocktest.Clients(t, redlocktest.ProxyAddrs(ps)), redlocktest.Options(redlock.Options{TTL: conformanceTTL, NodeTimeout: conformanceNodeTimeout}, prefix))
			if err != nil {
				t.Fatalf("redlock.New() = %v", err)
			}
			// Kill blackholes the client's five fault proxies: every
			// extension fails and the keys expire by the nodes' clocks.
			return batontest.FromClient(c.Baton(), func(t testing.TB) {
				for i, p := range ps {
					if err := p.Blackhole(""); err != nil {
						t.Fatalf("Blackhole(node %d) = %v", i, err)
					}
				}
			})
		},
		Entries: func(t testing.TB, name string) []string { return entries(t, admin, name) },
		// A key expires TTL after its last extension executed; waiters
		// retry at least every TTL/4.
		SessionTTL: conformanceTTL + 100*time.Millisecond,
		// A node whose delete timed out keeps the key until it expires.
		CleanupBound: conformanceTTL + 500*time.Millisecond,
	}
}
