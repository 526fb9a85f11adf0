package etcdlock_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
)

// events is a baton.Observer that keeps every event.
type events struct {
	mu sync.Mutex
	es []baton.Event
}

func (r *events) Observe(_ context.Context, e baton.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.es = append(r.es, e)
}

func (r *events) all() []baton.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.es)
}

// TestObserved: Options.Observer reaches the client's recipes: a lock
// and its release report the acquire's start, its grant with the etcd
// lease as Session, and the release, under one acquire ID.
func TestObserved(t *testing.T) {
	rec := &events{}
	c := newClient(t, etcdlock.Options{Observer: rec})
	name := uniq(t)
	l := lock(t, mutex(t, c, name), name)
	release(t, l)
	es := rec.all()
	var kinds []baton.EventKind
	for _, e := range es {
		kinds = append(kinds, e.Kind)
	}
	want := []baton.EventKind{baton.EventAcquireStarted, baton.EventGranted, baton.EventReleased}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	for _, e := range es {
		if e.Engine != "etcd" || e.Recipe != "mutex" || e.Acquire != es[0].Acquire || e.Acquire == 0 {
			t.Errorf("event %+v, want Engine etcd, Recipe mutex, Acquire %d", e, es[0].Acquire)
		}
	}
	if g := es[1]; g.Token != l.Token() || g.Owner != l.Owner() || g.Session == "" {
		t.Errorf("grant %+v, want Token %d, Owner %s, the etcd lease as Session", g, l.Token(), l.Owner())
	}
}
