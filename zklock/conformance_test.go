package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/zklock"
)

// conformanceTimeout is the session timeout of the conformance clients.
// The test server has tickTime 200ms and a 400ms minimum, so 1s is
// granted as asked.
const conformanceTimeout = time.Second

// TestConformance runs baton's conformance suites against zklock on the
// test server through *baton.Client, the API users hold: each client
// dials through a fault proxy of its own, whose blackhole is its Kill.
func TestConformance(t *testing.T) {
	addr := testenv.ZK(t)
	admin := dial(t, addr, zklock.Options{SessionTimeout: 10 * time.Second})
	for _, tc := range []struct {
		name string
		run  func(*testing.T, batontest.Engine)
	}{
		{"Mutex", batontest.TestMutex},
		{"RWMutex", batontest.TestRWMutex},
		{"Semaphore", batontest.TestSemaphore},
		{"Election", batontest.TestElection},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, batontest.Engine{
				Name:             "zk",
				NewClient:        func(t testing.TB) batontest.Client { return proxiedClient(t, addr, conformanceTimeout) },
				Entries:          func(t testing.TB, name string) []string { return adminEntries(t, admin, nil, name) },
				SemaphoreEntries: func(t testing.TB, name string) []string { return semaphoreEntries(t, admin, nil, name) },
				// The server expires a session a session timeout after it
				// last heard from it, in buckets of one tickTime (200ms).
				SessionTTL: conformanceTimeout + 200*time.Millisecond,
			})
		})
	}
}

// proxiedClient dials addr through a fault proxy of its own, as the
// suite's Client: Kill blackholes the proxy, so the server stops hearing
// the session's pings and expires it, and the client hears nothing.
func proxiedClient(t testing.TB, addr string, timeout time.Duration) batontest.Client {
	p, err := faultproxy.Start(addr)
	if err != nil {
		t.Fatalf("faultproxy.Start(%q) = %v", addr, err)
	}
	t.Cleanup(p.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := zklock.Dial(ctx, []string{p.Addr}, zklock.Options{SessionTimeout: timeout})
	if err != nil {
		t.Fatalf("zklock.Dial(%q → %s) = %v", p.Addr, addr, err)
	}
	return batontest.FromClient(c.Baton(), func(t testing.TB) {
		if err := p.Blackhole(""); err != nil {
			t.Fatalf("Blackhole() = %v", err)
		}
	})
}

// adminEntries lists the entries of name through admin, a client not
// under test; sync, if set, runs first (an ensemble's member may lag).
func adminEntries(t testing.TB, admin *zklock.Client, sync func(t testing.TB, dir string), name string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if sync != nil {
		dir, err := admin.Dir(name)
		if err != nil {
			t.Fatalf("Dir(%q) = %v", name, err)
		}
		sync(t, dir)
	}
	es, err := admin.Entries(ctx, name)
	if err != nil {
		t.Fatalf("Entries(%q) = %v", name, err)
	}
	return es
}

// semaphoreEntries lists Curator's semaphore layout: the guard mutex's
// entries under "<name>/locks", the permits under "<name>/leases" (the
// two container directories themselves are not entries).
func semaphoreEntries(t testing.TB, admin *zklock.Client, sync func(t testing.TB, dir string), name string) []string {
	var es []string
	for _, sub := range []string{"locks", "leases"} {
		for _, e := range adminEntries(t, admin, sync, name+"/"+sub) {
			es = append(es, sub+"/"+e)
		}
	}
	return es
}
