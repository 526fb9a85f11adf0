package batonprom_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/testenv"
	batonprom "github.com/baton-go/baton/prom"
	"github.com/baton-go/baton/zklock"
)

// TestHerdZK queues 100 waiters behind one holder on a real ZooKeeper,
// all reporting to one Collector, and scrapes it over HTTP: exactly 100
// waiting while the holder holds, then, once the holder and every waiter
// in turn have released, none waiting or held and 101 grants, each with
// its wait observed.
func TestHerdZK(t *testing.T) {
	const herd = 100
	zk := testenv.ZK(t)
	s := newScraper(t, batonprom.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dial := func() *zklock.Client {
		c, err := zklock.Dial(ctx, []string{zk}, zklock.Options{SessionTimeout: 10 * time.Second, Observer: s.c})
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	name := "baton-test/prom-herd/" + baton.NewOwnerID()[:8]
	mutex := func(c *zklock.Client) interface {
		Lock(context.Context) (*baton.Lease, error)
	} {
		m, err := c.Mutex(name)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	holder := mutex(dial())
	l, err := holder.Lock(ctx)
	if err != nil {
		t.Fatalf("holder: Lock = %v", err)
	}
	s.scrape().gauges(t, "holder alone", zkMutex, 0, 1, 0)

	waiters := mutex(dial())
	errs := make(chan error, herd)
	var wg sync.WaitGroup
	for range herd {
		wg.Add(1)
		go func() { // owner: this test, which waits for it
			defer wg.Done()
			wl, err := waiters.Lock(ctx)
			if err == nil {
				err = wl.Release(ctx)
			}
			errs <- err
		}()
	}
	waitGauge(t, s, "baton_acquires_waiting", herd)
	// Nobody can be granted while the holder holds: the figure stays.
	time.Sleep(200 * time.Millisecond)
	f := s.scrape()
	f.gauges(t, "the herd waiting", zkMutex, herd, 1, 0)
	wantValue(t, "granted before the release", f.value(t, "baton_acquires_total", zkMutex+",result=granted"), 1)

	if err := l.Release(ctx); err != nil {
		t.Fatalf("holder: Release = %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
	}
	f = s.scrape()
	f.gauges(t, "after the herd", zkMutex, 0, 0, 0)
	wantValue(t, "baton_acquires_total{granted}", f.value(t, "baton_acquires_total", zkMutex+",result=granted"), herd+1)
	n, _ := f.hist(t, "baton_acquire_wait_seconds", zkMutex+",result=granted")
	wantCount(t, "baton_acquire_wait_seconds_count{granted}", n, herd+1)
	n, _ = f.hist(t, "baton_hold_seconds", zkMutex+",end=released")
	wantCount(t, "baton_hold_seconds_count{released}", n, herd+1)
	if got := s.c.Tracking(); got != 0 {
		t.Errorf("Tracking() = %d after every lease ended, want 0", got)
	}
}

const zkMutex = "engine=zk,recipe=mutex"

// waitGauge scrapes until the gauge name of the ZooKeeper mutex reads
// want, failing after 30s.
func waitGauge(t *testing.T, s *scraper, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := s.scrape().value(t, name, zkMutex)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s{%s} = %v after 30s, want %v", name, zkMutex, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
