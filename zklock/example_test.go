package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/zklock"
)

// newExampleClient is the setup the examples share: a client of the test
// ZooKeeper server (BATON_TEST_ZK; TestMain leaves the examples out when it
// is not set). Use your own servers, or zklock.ParseURL("zk://h1:2181/app").
func newExampleClient() (*baton.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return zklock.Dial(ctx, []string{os.Getenv("BATON_TEST_ZK")}, zklock.Options{SessionTimeout: 10 * time.Second})
}

func ExampleDial_rwMutex() {
	c, err := newExampleClient()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// The same znodes as Curator's InterProcessReadWriteLock on /example/catalog.
	rw, err := c.RWMutex("example/catalog")
	if err != nil {
		fmt.Println(err)
		return
	}
	r1, err := rw.RLock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	r2, err := rw.TryRLock(ctx) // readers share
	fmt.Println("second reader:", err == nil)
	_, err = rw.TryLock(ctx) // a writer waits for both
	fmt.Println("writer while read:", errors.Is(err, baton.ErrNotAcquired))
	// A reader cannot upgrade: two upgrading readers would deadlock.
	_, err = rw.Lock(r1.Context())
	fmt.Println("upgrade:", errors.Is(err, baton.ErrUpgradeRefused))
	r1.Release(ctx)
	r2.Release(ctx)

	w, err := rw.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The writer's token exceeds every earlier grant's.
	fmt.Println("writer token above readers':", w.Token() > r1.Token() && w.Token() > r2.Token())
	w.Release(ctx)
	// Output:
	// second reader: true
	// writer while read: true
	// upgrade: true
	// writer token above readers': true
}

func ExampleDial_semaphore() {
	c, err := newExampleClient()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// Two permits, shared with Curator's InterProcessSemaphoreV2(client,
	// "/example/exports", 2). Every client must use the same N; a baton
	// client that meets another baton client's N reports it.
	s, err := c.Semaphore("example/exports", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	// OnDisagreement is the queue engines' own: baton.As reaches it.
	if d, ok := baton.As[interface {
		OnDisagreement(func(queuekit.Disagreement))
	}](s); ok {
		d.OnDisagreement(func(d queuekit.Disagreement) { fmt.Println(d) })
	}
	a, _ := s.Acquire(ctx)
	b, _ := s.Acquire(ctx)
	_, err = s.TryAcquire(ctx)
	fmt.Println("third permit:", errors.Is(err, baton.ErrNotAcquired))
	a.Release(ctx) // the permit comes back
	c3, err := s.TryAcquire(ctx)
	fmt.Println("after a release:", err == nil)
	b.Release(ctx)
	c3.Release(ctx)
	// Output:
	// third permit: true
	// after a release: true
}

func ExampleDial_election() {
	c, err := newExampleClient()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// The same znodes as Curator's LeaderLatch(client, "/example/scheduler",
	// "scheduler-a"): the ID is the participant id.
	el, err := c.Election("example/scheduler")
	if err != nil {
		fmt.Println(err)
		return
	}
	ld, err := el.CampaignAs(ctx, "scheduler-a")
	if err != nil {
		fmt.Println(err)
		return
	}
	cur, _ := el.Leader(ctx)
	fmt.Println("leader:", cur.ID, "epoch > 0:", ld.Epoch() > 0)
	// Take work only while Admit allows it, and fence it with the epoch;
	// stop when ld.Context() ends.
	fmt.Println("admit:", ld.Admit(ctx))
	err = ld.Resign(ctx, baton.ResignPlan{
		Drain: func(ctx context.Context) error {
			fmt.Println("drain: admit says", ld.Admit(ctx))
			return nil
		},
		Checkpoint: func(ctx context.Context, epoch uint64) error {
			fmt.Println("checkpoint fenced by the epoch:", epoch == ld.Epoch())
			return nil
		},
	})
	fmt.Println("resigned:", err, context.Cause(ld.Context()))
	// Output:
	// leader: scheduler-a epoch > 0: true
	// admit: <nil>
	// drain: admit says baton: leader resigning
	// checkpoint fenced by the epoch: true
	// resigned: <nil> baton: lease released
}

func ExampleClient() {
	c, err := newExampleClient()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// What only ZooKeeper has, the session, is the engine's own Client's.
	zc, ok := baton.As[*zklock.Client](c)
	fmt.Println("zk client:", ok, "session timeout:", zc.SessionTimeout())
	// Output:
	// zk client: true session timeout: 10s
}
