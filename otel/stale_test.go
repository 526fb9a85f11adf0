package batonotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/baton-go/baton/fence"
	batonotel "github.com/baton-go/baton/otel"
)

// TestStaleRejectionNamesLock: a refusal reported by a fence whose write
// context is a request's, not the lease's, carries the lock name that
// fence.WithLockName gave it on the write's span event (with both tokens)
// and on the counter with LockNames; one with no name has no empty
// baton.lock.name attribute.
func TestStaleRejectionNamesLock(t *testing.T) {
	r := newRig(t, batonotel.Options{LockNames: true})
	ctx, write := r.tracer.Start(context.Background(), "write order")
	fence.Observe(fence.WithLockName(ctx, "orders/42"), r.o,
		&fence.StaleError{Resource: "order-42", Token: 6, Owner: "A", StoredToken: 7, StoredOwner: "B"})
	fence.Observe(ctx, r.o, &fence.StaleError{Resource: "order-43", Token: 3, Owner: "A", StoredToken: 4, StoredOwner: "B"})
	write.End()

	spans := r.spans.GetSpans()
	if len(spans) != 1 || len(spans[0].Events) != 2 {
		t.Fatalf("spans %+v, want the write span with two events", spans)
	}
	named, unnamed := attrMap(spans[0].Events[0].Attributes), attrMap(spans[0].Events[1].Attributes)
	for k, want := range map[string]string{"baton.lock.name": "orders/42", "baton.token": "6", "baton.stored_token": "7", "baton.resource": "order-42"} {
		if named[k] != want {
			t.Errorf("stale_rejected %s = %q, want %q (attributes %v)", k, named[k], want, named)
		}
	}
	if v, ok := unnamed["baton.lock.name"]; ok {
		t.Errorf("stale_rejected without a known lock has baton.lock.name = %q, want no such attribute", v)
	}
	m := r.collect()
	if got := m.sum("baton.stale_rejections", attribute.String("baton.engine", "fence"), attribute.String("baton.lock.name", "orders/42")); got != 1 {
		t.Errorf("baton.stale_rejections{lock orders/42} = %d, want 1", got)
	}
}
