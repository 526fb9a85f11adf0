package batonprom_test

import (
	"testing"

	"github.com/baton-go/baton/engine"
	batonprom "github.com/baton-go/baton/prom"
	"github.com/baton-go/baton/testkit/storytest"
)

// TestHerdZK queues 100 waiters behind one holder on a real ZooKeeper,
// all reporting to one Collector, and scrapes it over HTTP: exactly 100
// waiting while the holder holds, then, once the holder and every waiter
// in turn have released, none waiting or held and 101 grants, each with
// its wait observed.
func TestHerdZK(t *testing.T) {
	const herd = 100
	s := newScraper(t, batonprom.Options{})
	storytest.Herd{
		Name:     "baton-test/prom-herd/" + engine.NewOwnerID()[:8],
		N:        herd,
		Observer: s.c,
		Waiting:  func() int64 { return int64(s.scrape().value(t, "baton_acquires_waiting", zkMutex)) },
		Held:     func() { s.scrape().gauges(t, "holder alone", zkMutex, 0, 1, 0) },
		Queued: func() {
			f := s.scrape()
			f.gauges(t, "the herd waiting", zkMutex, herd, 1, 0)
			wantValue(t, "granted before the release", f.value(t, "baton_acquires_total", zkMutex+",result=granted"), 1)
		},
	}.Run(t)
	f := s.scrape()
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
