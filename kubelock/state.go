package kubelock

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Entry kinds, as the state annotation and Inspect name them.
const (
	kindMutex  = "mutex"
	kindRead   = "read"
	kindWrite  = "write"
	kindPermit = "permit"
	kindLeader = "leader"
)

// exclusive reports whether a holder of kind excludes every other holder.
func exclusive(kind string) bool { return kind != kindRead && kind != kindPermit }

// entry is one holder or waiter of a name in the state annotation. Its
// keys are short: every Lease of a busy semaphore carries one per permit
// and waiter, and an object's annotations are capped at 256 KiB.
type entry struct {
	Owner string `json:"o"`
	Kind  string `json:"k"`
	// Token is a holder's fencing token, a waiter's ticket (its place).
	Token uint64 `json:"t"`
	// Stamp grows with every renewal (holder) or refresh (waiter): an
	// observer that sees it change knows the entry is alive (see
	// observe.go). Nothing reads it as a time.
	Stamp uint64 `json:"s"`
	// TTL is the entry's lease time in milliseconds, counted by each
	// observer from when it saw Stamp change.
	TTL   int64  `json:"d"`
	Proc  string `json:"p,omitempty"` // holder record (engine.ProcessData)
	ID    string `json:"i,omitempty"` // a leader's candidate ID
	N     int    `json:"n,omitempty"` // a permit's semaphore N
	Since int64  `json:"a,omitempty"` // grant or queue time, unix ms on the writer's clock (Age only)
}

func (e *entry) ttl() time.Duration { return time.Duration(e.TTL) * time.Millisecond }

// state is the baton part of a name's Lease: its holders and waiters.
type state struct {
	Holders []entry `json:"h,omitempty"`
	Waiters []entry `json:"w,omitempty"`
}

// view is a name's Lease as one read found it, decoded; mutators change
// it and the next write encodes it back (see Client.modify).
type view struct {
	lock string         // the lock name
	obj  *coordv1.Lease // as read; nil when the Lease does not exist
	// counter is the name's token counter: the largest token or ticket
	// ever minted for it.
	counter uint64
	st      state
	// valid: the spec's holderIdentity is what the state's holders
	// project to, so they hold. Otherwise someone else (a client-go
	// LeaderElector) wrote the spec: the state's holders lost, and a
	// non-empty holderIdentity is a foreign holder.
	valid bool
	// touched: the holders changed or renewed; the write projects them
	// onto the spec.
	touched bool
	// stale are the state's holders when the spec is not theirs.
	stale []entry
}

// decode reads obj (nil: no Lease yet) as the view of lock.
func decode(lock string, obj *coordv1.Lease) (*view, error) {
	v := &view{lock: lock, obj: obj, valid: true}
	if obj == nil {
		return v, nil
	}
	if n, ok := obj.Annotations[annName]; ok && n != lock {
		return nil, fmt.Errorf("Lease %q belongs to lock %q, not %q (object names of both map alike)", obj.Name, n, lock)
	}
	if s := obj.Annotations[annToken]; s != "" {
		c, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: Lease %q: annotation %s=%q", ErrBadCounter, obj.Name, annToken, s)
		}
		v.counter = c
	}
	if s := obj.Annotations[annState]; s != "" {
		if err := json.Unmarshal([]byte(s), &v.st); err != nil {
			return nil, fmt.Errorf("Lease %q: annotation %s: %w", obj.Name, annState, err)
		}
	}
	v.valid = specHolder(obj) == projection(v.st.Holders)
	if !v.valid {
		// Lost to whoever wrote the spec: kept out of every decision, and
		// out of the next write.
		v.stale, v.st.Holders = v.st.Holders, nil
	}
	return v, nil
}

// specHolder is the Lease's spec.holderIdentity, "" when unset.
func specHolder(obj *coordv1.Lease) string {
	if obj == nil || obj.Spec.HolderIdentity == nil {
		return ""
	}
	return *obj.Spec.HolderIdentity
}

// foreign returns the holder baton did not write: a non-empty
// holderIdentity that is not the projection of the state's holders.
func (v *view) foreign() string {
	if v.valid {
		return ""
	}
	return specHolder(v.obj)
}

// maxShown is how many owners a multi-holder projection names.
const maxShown = 4

// projection is the spec.holderIdentity that holders are written as: the
// owner of an exclusive holder, the owners of readers or permits joined by
// ",", the first maxShown and "+N" more, so that kubectl's HOLDER column
// names them; "" for none.
func projection(holders []entry) string {
	switch len(holders) {
	case 0:
		return ""
	case 1:
		return holders[0].Owner
	}
	owners := make([]string, 0, maxShown+1)
	for i, h := range holders {
		if i == maxShown {
			owners = append(owners, "+"+strconv.Itoa(len(holders)-maxShown))
			break
		}
		owners = append(owners, h.Owner)
	}
	return strings.Join(owners, ",")
}

// mint returns the next token of the name.
func (v *view) mint() uint64 {
	v.counter++
	return v.counter
}

// find returns the index of owner's entry in es, or -1.
func find(es []entry, owner string) int {
	return slices.IndexFunc(es, func(e entry) bool { return e.Owner == owner })
}

// drop removes owner's holder and waiter entries and reports whether it
// had any.
func (v *view) drop(owner string) bool {
	had := false
	if i := find(v.st.Holders, owner); i >= 0 {
		v.st.Holders = slices.Delete(v.st.Holders, i, i+1)
		v.touched, had = true, true
	}
	if i := find(v.st.Waiters, owner); i >= 0 {
		v.st.Waiters = slices.Delete(v.st.Waiters, i, i+1)
		had = true
	}
	return had
}

// encode writes the view into a copy of its Lease (a new one when there
// was none), projecting the holders onto the spec when they changed, as
// client-go's LeaseLock writes a LeaderElectionRecord (see project).
func (v *view) encode(objName, ns string, now time.Time) (*coordv1.Lease, error) {
	var obj *coordv1.Lease
	if v.obj != nil {
		obj = v.obj.DeepCopy()
	} else {
		obj = &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: objName, Namespace: ns}}
	}
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels[labelLock] = nameHash(v.lock)
	obj.Labels[labelManaged] = managedBy
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Annotations[annName] = v.lock
	obj.Annotations[annToken] = strconv.FormatUint(v.counter, 10)
	if len(v.st.Waiters) == 0 {
		delete(obj.Annotations, annWaiters)
	} else {
		obj.Annotations[annWaiters] = strconv.Itoa(len(v.st.Waiters))
	}
	if len(v.st.Holders) == 0 && len(v.st.Waiters) == 0 {
		delete(obj.Annotations, annState)
	} else {
		b, err := json.Marshal(v.st)
		if err != nil {
			return nil, err
		}
		obj.Annotations[annState] = string(b)
	}
	if v.touched || v.obj == nil {
		project(&obj.Spec, v.st.Holders, now)
	}
	return obj, nil
}

// project writes holders onto spec as client-go's LeaderElector writes
// its record: holderIdentity the holders' projection; on a change of
// holder to a new one, acquireTime now and leaseTransitions + 1; while
// held, renewTime now and leaseDurationSeconds the longest lease time in
// whole seconds, rounded up, plus one (client-go then waits longer than
// baton holds; see the comment inside). With no holder left it writes what client-go's release
// writes: an empty holderIdentity, leaseDurationSeconds 1, acquireTime
// and renewTime now, leaseTransitions unchanged. renewTime is this
// client's clock and informs only: no reader compares it with its own
// (see the package doc's "Expiry").
func project(spec *coordv1.LeaseSpec, holders []entry, now time.Time) {
	id := projection(holders)
	t := metav1.NewMicroTime(now)
	old := ""
	if spec.HolderIdentity != nil {
		old = *spec.HolderIdentity
	}
	transitions := int32(0)
	if spec.LeaseTransitions != nil {
		transitions = *spec.LeaseTransitions
	}
	spec.HolderIdentity = &id
	spec.RenewTime = &t
	if id == "" {
		one := int32(1)
		spec.LeaseDurationSeconds, spec.AcquireTime = &one, &t
		spec.LeaseTransitions = &transitions
		return
	}
	var longest int64
	for _, h := range holders {
		longest = max(longest, h.TTL)
	}
	// Rounded up, and a second more: client-go compares records with
	// their times in whole seconds (LeaderElectionRecord's metav1.Time),
	// so a renewal in the same second as the one before (they come every
	// TTL/3, and a slow read can bring two closer) changes nothing it
	// sees, and it may count the lease from up to a second before baton's
	// last renewal. The second more keeps its takeover after baton's Lost.
	secs := int32((longest+999)/1000) + 1
	spec.LeaseDurationSeconds = &secs
	if id != old {
		transitions++
		spec.AcquireTime = &t
	}
	if spec.AcquireTime == nil {
		spec.AcquireTime = &t
	}
	spec.LeaseTransitions = &transitions
}
