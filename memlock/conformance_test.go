package memlock_test

import (
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/memlock"
)

// conformanceTTL is the session TTL of the conformance clients. The suite
// waits for real expiry, so it runs on the real clock; memlock expires a
// session exactly on time, so a short TTL suffices.
const conformanceTTL = 500 * time.Millisecond

// TestConformance runs baton's conformance suite against memlock: the same
// recipes and the same contract as the ZooKeeper and etcd engines.
func TestConformance(t *testing.T) {
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
			t.Parallel()
			tc.run(t, engine(t))
		})
	}
}

// engine describes a fresh memlock server, closed at the end of t, to the
// suite.
func engine(t *testing.T) batontest.Engine {
	srv := memlock.NewServer(memlock.Options{SessionTTL: conformanceTTL})
	t.Cleanup(srv.Close)
	names := func(dir string) []string {
		var out []string
		for _, e := range srv.Entries(dir) {
			out = append(out, e.Name)
		}
		return out
	}
	return batontest.Engine{
		Name:      "mem",
		NewClient: func(testing.TB) batontest.Client { return conformanceClient{srv.Client("")} },
		Entries:   func(_ testing.TB, name string) []string { return names(name) },
		SemaphoreEntries: func(_ testing.TB, name string) []string {
			var out []string
			for _, sub := range []string{"locks", "leases"} {
				for _, e := range names(name + "/" + sub) {
					out = append(out, sub+"/"+e)
				}
			}
			return out
		},
		SessionTTL: conformanceTTL,
	}
}

// conformanceClient adapts *memlock.Client to the suite's interfaces.
type conformanceClient struct{ *memlock.Client }

func (c conformanceClient) Mutex(name string) (baton.Locker, error) {
	return batontest.As[baton.Locker](c.Client.Mutex(name))
}

func (c conformanceClient) RWMutex(name string) (batontest.RW, error) {
	return batontest.As[batontest.RW](c.Client.RWMutex(name))
}

func (c conformanceClient) Semaphore(name string, n int) (batontest.Sem, error) {
	return batontest.As[batontest.Sem](c.Client.Semaphore(name, n))
}

func (c conformanceClient) Election(name string) (batontest.Elect, error) {
	e, err := c.Client.Election(name)
	if err != nil {
		return nil, err
	}
	// A queue engine names a leadership by its entry's key.
	return batontest.ElectorOf(e, func(c baton.Candidate) string { return c.Entry }), nil
}

// Kill partitions the client: it hears nothing more from the server, which
// expires its session after the TTL.
func (c conformanceClient) Kill(testing.TB) { c.Partition() }
