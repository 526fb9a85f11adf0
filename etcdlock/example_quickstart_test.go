package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/etcdlock"
	_ "github.com/baton-go/baton/zklock" // zk:// for baton.Open
)

// The README's ZooKeeper and etcd quick start: your own etcd client gives
// the lock client, a *baton.Client, the type every engine gives; the
// leader's work is written against it and fenced by the leadership's
// epoch. (Not run here: it needs an etcd server; TestQuickstart runs the
// same code against $BATON_TEST_ETCD and $BATON_TEST_ZK.)
func Example_quickstart() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	// Your etcd client serves the locks too. Without one,
	// baton.Open(ctx, "etcd://127.0.0.1:2379") opens a client of its own,
	// and baton.Open(ctx, "zk://127.0.0.1:2181") one on ZooKeeper: the
	// same code runs on either.
	locks, err := etcdlock.New(cli, etcdlock.Options{TTL: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	var waves publisher
	if err := releaseWave(ctx, locks, "waves", &waves); err != nil {
		log.Fatal(err)
	}
}

// releaseWave campaigns to lead the election called name and, as leader,
// publishes one wave under the leadership's epoch, then hands over. The
// leader's work uses leader.Context(), cancelled the moment leadership is
// lost; a leader that has not noticed yet (paused, cut off) is refused by
// the resource, which keeps the largest epoch it has seen.
func releaseWave(ctx context.Context, locks *baton.Client, name string, pub *publisher) error {
	e, err := locks.Election(name)
	if err != nil {
		return err
	}
	leader, err := e.Campaign(ctx)
	if err != nil {
		return err
	}
	err = pub.Publish(leader.Context(), leader.Epoch(), "wave")
	return errors.Join(err, leader.Resign(context.Background(), baton.ResignPlan{}))
}

// publisher is the fenced resource of the example: it accepts a write only
// under an epoch above every epoch it accepted before.
type publisher struct {
	mu    sync.Mutex
	epoch uint64
	last  string
}

// Publish stores v under epoch, or refuses it with baton.ErrStaleToken.
func (p *publisher) Publish(ctx context.Context, epoch uint64, v string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if epoch <= p.epoch {
		return fmt.Errorf("epoch %d after %d: %w", epoch, p.epoch, baton.ErrStaleToken)
	}
	p.epoch, p.last = epoch, v
	return nil
}

// TestQuickstart runs the quick start's code on a client over the
// caller's etcd client, as the example, then on clients baton.Open made
// for etcd and for ZooKeeper: each run leads, publishes under a larger
// epoch than the run before on the same engine, and hands over, so that a
// late write under the first epoch is refused.
func TestQuickstart(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	name := "quickstart/waves/" + runID
	own := newClient(t, etcdlock.Options{TTL: 10 * time.Second}).Baton()
	for _, tc := range []struct {
		engine string
		runs   []func() *baton.Client
	}{
		{"etcd", []func() *baton.Client{
			func() *baton.Client { return own },
			func() *baton.Client { return quickstartOpen(t, "etcd://"+server.Endpoint) },
		}},
		{"zk", []func() *baton.Client{
			func() *baton.Client { return quickstartOpen(t, "zk://"+testenv.ZK(t)) },
			func() *baton.Client { return quickstartOpen(t, "zk://"+testenv.ZK(t)) },
		}},
	} {
		var pub publisher
		var first uint64
		for run, locks := range tc.runs {
			before := pub.epoch
			if err := releaseWave(ctx, locks(), name, &pub); err != nil {
				t.Fatalf("%s run %d: releaseWave = %v", tc.engine, run+1, err)
			}
			if pub.epoch <= before || pub.last != "wave" {
				t.Fatalf("%s run %d: published epoch %d after %d (%q): want a larger epoch", tc.engine, run+1, pub.epoch, before, pub.last)
			}
			if run == 0 {
				first = pub.epoch
			}
		}
		if err := pub.Publish(ctx, first, "late"); !errors.Is(err, baton.ErrStaleToken) {
			t.Fatalf("%s: a late write under the first epoch %d = %v, want baton.ErrStaleToken", tc.engine, first, err)
		}
	}
}

// quickstartOpen opens url with the example's TTL, closed at cleanup.
func quickstartOpen(t *testing.T, url string) *baton.Client {
	t.Helper()
	c, err := baton.Open(t.Context(), url, baton.WithTTL(10*time.Second))
	if err != nil {
		t.Fatalf("baton.Open(%q) = %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
