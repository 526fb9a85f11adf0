package fence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
)

// TestExternalTokens is the third SQL scheme (see the package doc): the
// tokens come from a counter outside the database (Redis INCR, no baton lock) and are
// checked in the database by Table and by the row columns. It also shows
// what must hold: one token source per resource that never goes back.
// When the counter is lost (here: deleted, as a failover onto a lagging
// replica or a FLUSH would), its tokens restart below the fence and every
// write is refused, visibly; raising the counter above Table.Max (the
// token floor) restores service without letting old holders back in.
func TestExternalTokens(t *testing.T) {
	addr := testenv.Redis(t)
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		rc := redis.NewClient(&redis.Options{Addr: addr})
		counter := "baton-test:fence-counter:" + engine.NewOwnerID()[:12]
		t.Cleanup(func() {
			if err := rc.Del(context.Background(), counter).Err(); err != nil {
				t.Errorf("DEL %s = %v", counter, err)
			}
			_ = rc.Close()
		})
		mint := func() uint64 {
			t.Helper()
			n, err := rc.Incr(ctx, counter).Uint64()
			if err != nil {
				t.Fatalf("INCR %s = %v", counter, err)
			}
			return n
		}
		r := ordersTable(t, b)
		key := []fence.Column{{Name: "id", Value: "o1"}}
		if _, err := b.db.ExecContext(ctx, `INSERT INTO `+quote(b.table.Dialect, r.Table)+` (id, status) VALUES ('o1', 'NEW')`); err != nil {
			t.Fatalf("insert o1 = %v", err)
		}

		tokA, tokB := mint(), mint() // A's grant, then B's after A was presumed dead
		if err := b.write(ctx, b.table, "orders/o1", tokB, "B", "PAID"); err != nil {
			t.Fatalf("B's write with %d = %v", tokB, err)
		}
		if err := rowUpdate(ctx, b.db, r.Update, "o1", "PAID", tokB, "B"); err != nil {
			t.Fatalf("B's row update with %d = %v", tokB, err)
		}
		if err := b.write(ctx, b.table, "orders/o1", tokA, "A", "CANCELLED"); !errors.Is(err, baton.ErrStaleToken) {
			t.Errorf("A's late write with %d = %v, want %v", tokA, err, baton.ErrStaleToken)
		}
		if err := rowUpdate(ctx, b.db, r.Update, "o1", "CANCELLED", tokA, "A"); !errors.Is(err, baton.ErrStaleToken) {
			t.Errorf("A's late row update with %d = %v, want %v", tokA, err, baton.ErrStaleToken)
		}
		if v, _ := b.get(t, "orders/o1"); v != "PAID" {
			t.Errorf("business row = %q, want PAID", v)
		}
		if s := status(t, b, r, "o1"); s != "PAID" {
			t.Errorf("status = %q, want PAID", s)
		}

		// Negative control: without the fence A's late write lands.
		if err := b.write(ctx, fence.Unfenced{Table: b.table}, "orders/o1-unfenced", tokB, "B", "PAID"); err != nil {
			t.Fatalf("unfenced B = %v", err)
		}
		if err := b.write(ctx, fence.Unfenced{Table: b.table}, "orders/o1-unfenced", tokA, "A", "CANCELLED"); err != nil {
			t.Errorf("unfenced A = %v, want nil", err)
		}
		if v, _ := b.get(t, "orders/o1-unfenced"); v != "CANCELLED" {
			t.Errorf("unfenced business row = %q, want the late CANCELLED", v)
		}

		// The counter is lost and restarts: its new tokens are refused.
		if err := rc.Del(ctx, counter).Err(); err != nil {
			t.Fatalf("DEL %s = %v", counter, err)
		}
		tokC := mint()
		if err := b.write(ctx, b.table, "orders/o1", tokC, "C", "SHIPPED"); !errors.Is(err, baton.ErrStaleToken) {
			t.Errorf("write with rewound token %d = %v, want %v", tokC, err, baton.ErrStaleToken)
		}
		if err := rowUpdate(ctx, b.db, r.Update, "o1", "SHIPPED", tokC, "C"); !errors.Is(err, baton.ErrStaleToken) {
			t.Errorf("row update with rewound token %d = %v, want %v", tokC, err, baton.ErrStaleToken)
		}
		// Token floor: raise the counter above every stored token.
		floor, err := b.table.Max(ctx, b.db)
		if err != nil {
			t.Fatalf("Max = %v", err)
		}
		if rowTok, _, _, err := r.Current(ctx, b.db, key); err != nil {
			t.Fatalf("Row.Current = %v", err)
		} else {
			floor = max(floor, rowTok)
		}
		if err := rc.Set(ctx, counter, floor, 0).Err(); err != nil {
			t.Fatalf("SET %s %d = %v", counter, floor, err)
		}
		tokD := mint()
		if err := b.write(ctx, b.table, "orders/o1", tokD, "D", "SHIPPED"); err != nil {
			t.Errorf("write with %d above the floor %d = %v", tokD, floor, err)
		}
		if err := rowUpdate(ctx, b.db, r.Update, "o1", "SHIPPED", tokD, "D"); err != nil {
			t.Errorf("row update with %d above the floor %d = %v", tokD, floor, err)
		}
		if err := b.write(ctx, b.table, "orders/o1", tokA, "A", "CANCELLED"); !errors.Is(err, baton.ErrStaleToken) {
			t.Errorf("A's write with %d after the floor = %v, want %v", tokA, err, baton.ErrStaleToken)
		}
	})
}
