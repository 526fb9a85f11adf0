package queuekit_test

import (
	"errors"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

// TestNameReservesEntryNames: a lock name segment shaped like a ZooKeeper
// entry of any recipe kind is refused, so a lock's directory never reads
// as an entry of its parent's queue; the semaphore's sub-queues are
// refused as names too. The list of kinds here is every queuekit.Kind.
func TestNameReservesEntryNames(t *testing.T) {
	for _, k := range []queuekit.Kind{queuekit.KindMutex, queuekit.KindRead, queuekit.KindWrite, queuekit.KindLatch, queuekit.KindLease} {
		name := "x/" + string(k) + "0000000001"
		if _, err := engine.ValidateName(name); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalidName", name, err)
		}
	}
	srv, _ := memServer(t)
	c := srv.Client("a")
	for _, name := range []string{"pool/locks", "pool/leases"} {
		if _, err := c.Mutex(name); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("Mutex(%q) = %v, want ErrInvalidName: it would queue with semaphore \"pool\"", name, err)
		}
	}
}
