package batonprom_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/clock"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/memlock"
	batonprom "github.com/baton-go/baton/prom"
)

// TestEngineErrors classifies the errors a real engine's acquires return
// (the in-memory engine runs the queue recipes ZooKeeper and etcd run),
// so the result label is checked against errors as they are wrapped in
// practice, not as a test would build them.
func TestEngineErrors(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := memlock.NewServer(memlock.Options{Clock: fake, SessionTTL: 10 * time.Second})
	t.Cleanup(srv.Close)
	holder, other := srv.Client("holder"), srv.Client("other")
	t.Cleanup(func() { holder.Close(); other.Close() })
	hm, err := holder.Mutex("jobs/nightly")
	if err != nil {
		t.Fatal(err)
	}
	om, err := other.Mutex("jobs/nightly")
	if err != nil {
		t.Fatal(err)
	}
	l, err := hm.Lock(t.Context())
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })

	_, tryErr := om.TryLock(t.Context())
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, timeoutErr := om.Lock(short)
	gone, cancelNow := context.WithCancel(t.Context())
	cancelNow()
	_, cancelErr := om.Lock(gone)
	other.Close()
	_, closedErr := om.Lock(t.Context())

	s := newScraper(t, batonprom.Options{})
	for _, err := range []error{tryErr, timeoutErr, cancelErr, closedErr} {
		if err == nil {
			t.Fatal("an acquire that should fail was granted")
		}
		s.observe(baton.Event{Kind: baton.EventAcquireFailed, Engine: "mem", Recipe: "mutex", Acquire: engine.NextAcquireID(), Err: err})
	}
	f := s.scrape()
	for _, r := range []string{"not_acquired", "timeout", "cancelled", "closed"} {
		wantValue(t, "acquires with result "+r, f.value(t, "baton_acquires_total", lock+",result="+r), 1)
	}
}
