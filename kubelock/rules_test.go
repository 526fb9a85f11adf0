package kubelock

import (
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
)

// TestGrantRules checks the grant decisions of each recipe on the entries
// an attempt sees (no server: the decisions are pure).
func TestGrantRules(t *testing.T) {
	h := func(kind string) other { return other{kind: kind} }
	w := func(kind string, ticket uint64) other { return other{kind: kind, waiting: true, ticket: ticket} }
	for _, tc := range []struct {
		why    string
		kind   string
		n      int
		others []other
		ticket uint64
		want   bool
	}{
		{"free mutex", kindMutex, 0, nil, 0, true},
		{"held mutex", kindMutex, 0, []other{h(kindMutex)}, 5, false},
		{"foreign holder", kindLeader, 0, []other{h("foreign")}, 5, false},
		{"newcomer yields to a waiter", kindMutex, 0, []other{w(kindMutex, 3)}, 0, false},
		{"first waiter", kindMutex, 0, []other{w(kindMutex, 7)}, 3, true},
		{"second waiter", kindMutex, 0, []other{w(kindMutex, 3)}, 7, false},
		{"readers share", kindRead, 0, []other{h(kindRead), h(kindRead)}, 0, true},
		{"writer excludes readers", kindRead, 0, []other{h(kindWrite)}, 9, false},
		{"queued writer stops a new reader", kindRead, 0, []other{h(kindRead), w(kindWrite, 4)}, 0, false},
		{"reader ahead of a writer", kindRead, 0, []other{h(kindRead), w(kindWrite, 8)}, 4, true},
		{"mutex holder excludes a reader", kindRead, 0, []other{h(kindMutex)}, 0, false},
		{"writer waits for readers", kindWrite, 0, []other{h(kindRead)}, 4, false},
		{"writer before a later reader", kindWrite, 0, []other{w(kindRead, 9)}, 4, true},
		{"permits left", kindPermit, 2, []other{h(kindPermit)}, 0, true},
		{"permits taken", kindPermit, 2, []other{h(kindPermit), h(kindPermit)}, 0, false},
		{"waiter ahead takes the last permit", kindPermit, 2, []other{h(kindPermit), w(kindPermit, 3)}, 8, false},
		{"waiter behind does not count", kindPermit, 2, []other{h(kindPermit), w(kindPermit, 9)}, 8, true},
		{"foreign holder takes a permit", kindPermit, 1, []other{h("foreign")}, 0, false},
	} {
		if got := grantable(tc.kind, tc.n, tc.others, tc.ticket); got != tc.want {
			t.Errorf("%s: grantable(%s) = %v, want %v", tc.why, tc.kind, got, tc.want)
		}
	}
}

// TestProject checks the spec a write leaves, against what client-go's
// LeaderElector writes: a new holder adds a transition and sets
// acquireTime; a renewal keeps both; the last release writes client-go's
// released record.
func TestProject(t *testing.T) {
	var spec coordv1.LeaseSpec
	t0 := time.Now()
	project(&spec, []entry{{Owner: "a", TTL: 1500}}, t0)
	// 1.5s: 2s rounded up, and a second more, since client-go cannot
	// tell renewals in the same second apart.
	if *spec.HolderIdentity != "a" || *spec.LeaseTransitions != 1 || *spec.LeaseDurationSeconds != 3 || !spec.AcquireTime.Time.Equal(spec.RenewTime.Time) {
		t.Fatalf("grant: %+v", spec)
	}
	acquired := spec.AcquireTime.Time
	project(&spec, []entry{{Owner: "a", TTL: 1500}}, t0.Add(time.Second))
	if *spec.LeaseTransitions != 1 || !spec.AcquireTime.Time.Equal(acquired) || spec.RenewTime.Time.Equal(acquired) {
		t.Errorf("renewal: %+v", spec)
	}
	project(&spec, nil, t0.Add(2*time.Second))
	if *spec.HolderIdentity != "" || *spec.LeaseDurationSeconds != 1 || *spec.LeaseTransitions != 1 {
		t.Errorf("release: %+v", spec)
	}
	project(&spec, []entry{{Owner: "r1", TTL: 3000}, {Owner: "r2", TTL: 3000}, {Owner: "r3"}, {Owner: "r4"}, {Owner: "r5"}, {Owner: "r6"}}, t0.Add(3*time.Second))
	if got := *spec.HolderIdentity; got != "r1,r2,r3,r4,+2" || *spec.LeaseTransitions != 2 || *spec.LeaseDurationSeconds != 4 {
		t.Errorf("readers: holderIdentity %q, transitions %d, duration %d", got, *spec.LeaseTransitions, *spec.LeaseDurationSeconds)
	}
}

// TestObserverIgnoresClocks checks the expiry rule: an entry's lease
// counts from when this client first saw its stamp, whatever the times
// written in the Lease say, and restarts at each new stamp.
func TestObserverIgnoresClocks(t *testing.T) {
	o := newObserver()
	e := entry{Owner: "x", Stamp: 1, TTL: 1000, Since: time.Now().Add(-time.Hour).UnixMilli()}
	v := &view{obj: &coordv1.Lease{}, st: state{Holders: []entry{e}}}
	v.obj.Name = "l"
	t0 := time.Now()
	s := o.observe(v, t0)
	if got := s.expiry(&e, t0); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("first seen: expiry %v after the read, want 1s", got.Sub(t0))
	}
	s = o.observe(v, t0.Add(900*time.Millisecond))
	if got := s.expiry(&e, t0.Add(900*time.Millisecond)); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("unchanged stamp: expiry moved to %v", got.Sub(t0))
	}
	v.st.Holders[0].Stamp = 2
	e.Stamp = 2
	s = o.observe(v, t0.Add(950*time.Millisecond))
	if got := s.expiry(&e, t0); !got.Equal(t0.Add(1950 * time.Millisecond)) {
		t.Errorf("renewed: expiry %v, want 1.95s after the first read", got.Sub(t0))
	}
}
