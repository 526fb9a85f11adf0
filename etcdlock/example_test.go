package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/etcdlock"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func Example() {
	// server.Endpoint is the etcd of this test run; use your own URL,
	// such as "etcds://h1:2379,h2:2379,h3:2379".
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := baton.Open(ctx, "etcd://"+server.Endpoint, baton.WithTTL(10*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	m, err := c.Mutex("example/open-report")
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Who holds it, as an operator's `baton inspect` shows it.
	in, err := c.Inspect(ctx, "example/open-report")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(in.Holders), in.Holders[0].PID == os.Getpid(), in.Holders[0].Token == l.Token())
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}
	// Output: 1 true true
}

func ExampleNew() {
	// With an etcd client of your own. server.Endpoint is the etcd of
	// this test run.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{server.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()
	c, err := etcdlock.New(cli, etcdlock.Options{TTL: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	m, err := c.Mutex("example/nightly-report")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Pass l.Token() with every write to the resource, and stop when
	// l.Context() ends (the lease was lost).
	fmt.Println(l.State(), l.Token() > 0)
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(l.State())
	// Output:
	// held true
	// released
}

// newExampleClient is the setup the examples below share: a baton client
// on the etcd of this test run.
func newExampleClient() (*baton.Client, func(), error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{server.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, nil, err
	}
	c, err := etcdlock.New(cli, etcdlock.Options{TTL: 10 * time.Second})
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	return c, func() { c.Close(); cli.Close() }, nil
}

func ExampleNew_rwMutex() {
	c, done, err := newExampleClient()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

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

func ExampleNew_semaphore() {
	c, done, err := newExampleClient()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// Two permits: at most two exports run at once. Every client must use
	// the same N; a baton client that meets another N reports it.
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

func ExampleNew_election() {
	c, done, err := newExampleClient()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// Compatible with `etcdctl elect example/scheduler`: the ID is the
	// proposal that `etcdctl elect -l` prints.
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
