package kubelock

import (
	"strconv"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
)

// observer keeps, for every Lease this client has read, when it saw each
// record change: the rule of client-go's leaderelection, by which a
// holder's lease runs out leaseDuration after this client observed its
// last renewal, on this client's monotonic clock. No other machine's
// clock is ever compared with this one, so clock offsets between nodes do
// not matter; only their rates do, and DriftMargin covers those.
//
// A record seen for the first time counts from that moment, however old
// its renewTime says it is: a dead holder is waited out for one whole
// lease duration by a client that never saw it alive. Forgetting a
// record is therefore always safe (it only makes the next judgement
// later), which is what bounds the map: records not read for
// forgetAfter are dropped.
type observer struct {
	mu    sync.Mutex
	objs  map[string]*seen
	swept time.Time
}

// seen is what one client has observed of one Lease.
type seen struct {
	spec    string    // the spec record (client-go's LeaderElectionRecord fields)
	specAt  time.Time // when spec was first seen as it is
	entries map[string]stamp
	used    time.Time
}

// stamp is an entry's Stamp and when this client first saw it.
type stamp struct {
	n  uint64
	at time.Time
}

// forgetAfter is how long a Lease's observations are kept unread.
const forgetAfter = 10 * time.Minute

func newObserver() *observer { return &observer{objs: make(map[string]*seen)} }

// specRecord renders the fields client-go's LeaderElector compares to
// decide that a record changed.
func specRecord(obj *coordv1.Lease) string {
	s := obj.Spec
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	num := func(p *int32) string {
		if p == nil {
			return ""
		}
		return strconv.Itoa(int(*p))
	}
	at := ""
	if s.AcquireTime != nil {
		at = s.AcquireTime.UTC().Format(time.RFC3339Nano)
	}
	rt := ""
	if s.RenewTime != nil {
		rt = s.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	return str(s.HolderIdentity) + "\x00" + num(s.LeaseDurationSeconds) + "\x00" + at + "\x00" + rt + "\x00" +
		num(s.LeaseTransitions) + "\x00" + str(s.PreferredHolder) + "\x00" + string(ptrVal(s.Strategy))
}

func ptrVal[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// observe records v's Lease (read now) and returns the record of it.
func (o *observer) observe(v *view, now time.Time) *seen {
	o.mu.Lock()
	defer o.mu.Unlock()
	if now.Sub(o.swept) > forgetAfter {
		for k, s := range o.objs {
			if now.Sub(s.used) > forgetAfter {
				delete(o.objs, k)
			}
		}
		o.swept = now
	}
	if v.obj == nil {
		return &seen{used: now}
	}
	s := o.objs[v.obj.Name]
	if s == nil {
		s = &seen{entries: make(map[string]stamp)}
		o.objs[v.obj.Name] = s
	}
	s.used = now
	if rec := specRecord(v.obj); rec != s.spec || s.specAt.IsZero() {
		s.spec, s.specAt = rec, now
	}
	live := make(map[string]bool, len(v.st.Holders)+len(v.st.Waiters)+len(v.stale))
	for _, list := range [][]entry{v.st.Holders, v.st.Waiters, v.stale} {
		for _, e := range list {
			live[e.Owner] = true
			if old, ok := s.entries[e.Owner]; !ok || old.n != e.Stamp {
				s.entries[e.Owner] = stamp{n: e.Stamp, at: now}
			}
		}
	}
	for owner := range s.entries {
		if !live[owner] {
			delete(s.entries, owner)
		}
	}
	return s.clone()
}

// observeSpec records the spec record of obj, read now, without its
// state: the watch's observation, which decodes no annotation (see
// hub.follow).
func (o *observer) observeSpec(obj *coordv1.Lease, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.objs[obj.Name]
	if s == nil {
		s = &seen{entries: make(map[string]stamp)}
		o.objs[obj.Name] = s
	}
	s.used = now
	if rec := specRecord(obj); rec != s.spec || s.specAt.IsZero() {
		s.spec, s.specAt = rec, now
	}
}

// clone copies s for reading outside the lock.
func (s *seen) clone() *seen {
	c := *s
	c.entries = make(map[string]stamp, len(s.entries))
	for k, v := range s.entries {
		c.entries[k] = v
	}
	return &c
}

// expiry is when e's lease runs out as this client judges it: TTL after
// it first saw e's current Stamp.
func (s *seen) expiry(e *entry, now time.Time) time.Time {
	st, ok := s.entries[e.Owner]
	if !ok || st.n != e.Stamp {
		return now.Add(e.ttl())
	}
	return st.at.Add(e.ttl())
}

// specExpiry is when a foreign holder's lease runs out: leaseDurationSeconds
// after this client first saw the spec record as it is.
func (s *seen) specExpiry(obj *coordv1.Lease, now time.Time) time.Time {
	d := time.Duration(ptrVal(obj.Spec.LeaseDurationSeconds)) * time.Second
	if s.specAt.IsZero() {
		return now.Add(d)
	}
	return s.specAt.Add(d)
}
