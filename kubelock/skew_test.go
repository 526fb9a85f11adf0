package kubelock_test

import (
	"errors"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/kubelock"
)

// skewedDuration is the lease duration the skewed writer claims.
const skewedDuration = 2 * time.Second

// TestClockOffsetTolerated has a writer whose clock is an hour off hold a
// Lease: its renewTime is an hour in the past (a wall-clock judge would
// take the lock at once) or an hour in the future (a wall-clock judge
// would wait an hour). baton honours it for one lease duration from when
// it first saw the record, then takes over; and while the writer keeps
// renewing — with times still an hour off — baton never takes it.
func TestClockOffsetTolerated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset time.Duration
		renew  time.Duration // how long the writer keeps renewing; 0: dead from the start
	}{
		{"PastDead", -time.Hour, 0},
		{"FutureDead", time.Hour, 0},
		{"PastRenewing", -time.Hour, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, kubelock.Options{})
			cs, ns := admin(t)
			leases := cs.CoordinationV1().Leases(ns)
			name := lockName(t)
			obj, _ := c.LeaseName(name)
			skewed := func(l *coordv1.Lease) {
				id, secs, tr := "skewed-writer", int32(skewedDuration/time.Second), int32(1)
				at := metav1.NewMicroTime(time.Now().Add(tc.offset))
				l.Spec = coordv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs,
					AcquireTime: &at, RenewTime: &at, LeaseTransitions: &tr}
			}
			l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: obj}}
			skewed(l)
			if _, err := leases.Create(opCtx(t, 5*time.Second), l, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create the skewed holder's Lease: %v", err)
			}
			stopped := make(chan time.Time, 1)
			go func() { // the skewed writer renews, then dies; owned by this test, which reads stopped
				end := time.Now().Add(tc.renew)
				for time.Now().Before(end) {
					time.Sleep(400 * time.Millisecond)
					cur, err := leases.Get(opCtx(t, 5*time.Second), obj, metav1.GetOptions{})
					if err != nil {
						continue
					}
					if holderOf(cur) != "skewed-writer" {
						t.Errorf("baton took the Lease while its holder renewed: holderIdentity %q", holderOf(cur))
						break
					}
					skewed(cur)
					_, _ = leases.Update(opCtx(t, 5*time.Second), cur, metav1.UpdateOptions{})
				}
				stopped <- time.Now()
			}()
			m, _ := c.Mutex(name)
			start := time.Now()
			if l, err := m.TryLock(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNotAcquired) {
				t.Fatalf("TryLock on a Lease renewed %v off = %v, %v, want ErrNotAcquired", tc.offset, l, err)
			}
			got, err := m.Lock(opCtx(t, 20*time.Second))
			granted := time.Now()
			if err != nil {
				t.Fatalf("Lock = %v", err)
			}
			defer func() { _ = got.Release(opCtx(t, 5*time.Second)) }()
			last := <-stopped
			t.Logf("granted %v after the first read, %v after the writer's last renewal", granted.Sub(start).Round(time.Millisecond), granted.Sub(last).Round(time.Millisecond))
			if d := granted.Sub(start); d < skewedDuration {
				t.Errorf("granted %v after baton first saw the record, want ≥ its lease duration %v", d, skewedDuration)
			}
			if d := granted.Sub(last); tc.renew > 0 && d < skewedDuration-500*time.Millisecond {
				t.Errorf("granted %v after the writer's last renewal, want about %v", d, skewedDuration)
			}
			from := start
			if last.After(from) {
				from = last
			}
			if d := granted.Sub(from); d > skewedDuration+2*time.Second {
				t.Errorf("granted %v after the holder could have expired, want within %v", d, skewedDuration+2*time.Second)
			}
			lease := getLease(t, c, name)
			if holderOf(lease) != got.Owner() || lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions != 2 {
				t.Errorf("after the takeover: holderIdentity %q, leaseTransitions %v; want %q and 2", holderOf(lease), lease.Spec.LeaseTransitions, got.Owner())
			}
		})
	}
}
