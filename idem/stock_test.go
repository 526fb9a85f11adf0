package idem_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/baton-go/baton/idem"
)

// stock is the inventory story: SKU-1 has 5 available; order A
// wants 4 and order B wants 3. The invariant lives at the resource: one
// conditional UPDATE (qty >= wanted) and a unique ledger row per order.
type stock struct {
	b             backend
	items, ledger string
}

var errInsufficient = errors.New("insufficient stock")

func newStock(t *testing.T, b backend) *stock {
	t.Helper()
	s := &stock{b: b, items: "stock_" + b.suffix, ledger: "ledger_" + b.suffix}
	dropLater(t, b.db, s.items)
	dropLater(t, b.db, s.ledger)
	exec(t, b.db, `CREATE TABLE `+s.items+` (sku VARCHAR(64) PRIMARY KEY, qty INTEGER NOT NULL)`)
	exec(t, b.db, `CREATE TABLE `+s.ledger+` (order_id VARCHAR(64) PRIMARY KEY, sku VARCHAR(64) NOT NULL, qty INTEGER NOT NULL)`)
	return s
}

func (s *stock) reset(t *testing.T) {
	t.Helper()
	exec(t, s.b.db, `DELETE FROM `+s.ledger)
	exec(t, s.b.db, `DELETE FROM `+s.items)
	exec(t, s.b.db, `INSERT INTO `+s.items+` (sku, qty) VALUES ('SKU-1', 5)`)
}

// reserve takes qty for order in one transaction: the ledger's primary key
// makes a retried order a no-op, the conditional UPDATE decides.
func (s *stock) reserve(ctx context.Context, order string, qty int) error {
	b := s.b
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+s.ledger+` (order_id, sku, qty) VALUES (`+b.ph(1)+`, 'SKU-1', `+b.ph(2)+`)`, order, qty); err != nil {
		_ = tx.Rollback()
		if s.reserved(ctx, order) {
			return nil // the order was reserved before: a retry changes nothing
		}
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE `+s.items+` SET qty = qty - `+b.ph(1)+` WHERE sku = 'SKU-1' AND qty >= `+b.ph(2), qty, qty)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(errInsufficient, err) // the rollback drops the ledger row too
	}
	return tx.Commit()
}

func (s *stock) reserved(ctx context.Context, order string) bool {
	var n int
	err := s.b.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+s.ledger+` WHERE order_id = `+s.b.ph(1), order).Scan(&n)
	return err == nil && n == 1
}

// check asserts the invariant after orders A (4) and B (3) ran.
func (s *stock) check(t *testing.T, how string, errA, errB error) {
	t.Helper()
	ctx := t.Context()
	var qty, ledgerRows, ledgerQty int
	if err := s.b.db.QueryRowContext(ctx, `SELECT qty FROM `+s.items+` WHERE sku = 'SKU-1'`).Scan(&qty); err != nil {
		t.Fatalf("%s: read stock = %v", how, err)
	}
	if err := s.b.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(qty), 0) FROM `+s.ledger).Scan(&ledgerRows, &ledgerQty); err != nil {
		t.Fatalf("%s: read ledger = %v", how, err)
	}
	for _, err := range []error{errA, errB} {
		if err != nil && !errors.Is(err, errInsufficient) {
			t.Fatalf("%s: reserve = %v", how, err)
		}
	}
	if (errA == nil) == (errB == nil) {
		t.Fatalf("%s: A = %v, B = %v, want exactly one to succeed", how, errA, errB)
	}
	if qty < 0 || ledgerRows != 1 || qty+ledgerQty != 5 {
		t.Fatalf("%s: stock %d, ledger %d rows for %d, want one row and stock + ledger = 5", how, qty, ledgerRows, ledgerQty)
	}
}

// TestStock5Orders4And3: exactly one of the two orders succeeds, in both
// sequential orders and when they run concurrently, and a retry of the
// winner deducts nothing more.
func TestStock5Orders4And3(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		ctx := t.Context()
		s := newStock(t, b)

		s.reset(t)
		errA := s.reserve(ctx, "A", 4)
		errB := s.reserve(ctx, "B", 3)
		s.check(t, "A then B", errA, errB)
		if errA != nil {
			t.Fatalf("A first = %v, want success", errA)
		}
		if err := s.reserve(ctx, "A", 4); err != nil {
			t.Fatalf("retry of A = %v, want nil (already reserved)", err)
		}
		s.check(t, "A then B then A again", nil, errB)

		s.reset(t)
		errB = s.reserve(ctx, "B", 3)
		errA = s.reserve(ctx, "A", 4)
		s.check(t, "B then A", errA, errB)

		for round := range 15 {
			s.reset(t)
			var wg sync.WaitGroup
			start := make(chan struct{})
			wg.Go(func() { <-start; errA = s.reserve(ctx, "A", 4) })
			wg.Go(func() { <-start; errB = s.reserve(ctx, "B", 3) })
			close(start)
			wg.Wait()
			s.check(t, fmt.Sprintf("concurrent round %d", round), errA, errB)
		}
	})
}

// TestControlStockReadThenWrite is the negative control: each order reads
// the stock, checks it in the application and writes the new quantity
// unconditionally. Stepped by the test — both read, then both write — the
// two orders both succeed and 7 units are sold from 5. On PostgreSQL
// (READ COMMITTED) and MariaDB (REPEATABLE READ) the steps are two open
// transactions; SQLite lets only one transaction write and refuses a
// stale snapshot's write, so there each step is its own statement, which
// is what an application without a transaction does.
func TestControlStockReadThenWrite(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		ctx := t.Context()
		s := newStock(t, b)
		s.reset(t)
		type order struct {
			name string
			want int
			q    interface {
				ExecContext(context.Context, string, ...any) (sql.Result, error)
				QueryRowContext(context.Context, string, ...any) *sql.Row
			}
			tx   *sql.Tx
			seen int
		}
		orders := []*order{{name: "A", want: 4}, {name: "B", want: 3}}
		for _, o := range orders {
			o.q = b.db
			if b.name != "sqlite" {
				tx, err := b.db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatalf("begin %s = %v", o.name, err)
				}
				t.Cleanup(func() { _ = tx.Rollback() })
				o.tx, o.q = tx, tx
			}
		}
		for _, o := range orders { // both read 5 and both see enough
			if err := o.q.QueryRowContext(ctx, `SELECT qty FROM `+s.items+` WHERE sku = 'SKU-1'`).Scan(&o.seen); err != nil {
				t.Fatalf("%s reads = %v", o.name, err)
			}
			if o.seen < o.want {
				t.Fatalf("%s sees %d < %d", o.name, o.seen, o.want)
			}
		}
		sold := 0
		for _, o := range orders { // both write their computed quantity
			if _, err := o.q.ExecContext(ctx, `UPDATE `+s.items+` SET qty = `+b.ph(1)+` WHERE sku = 'SKU-1'`, o.seen-o.want); err != nil {
				t.Fatalf("%s writes = %v", o.name, err)
			}
			if o.tx != nil {
				if err := o.tx.Commit(); err != nil {
					t.Fatalf("%s commits = %v", o.name, err)
				}
			}
			sold += o.want
		}
		if sold <= 5 {
			t.Fatalf("read-then-write sold %d units, want more than 5 (the control must oversell)", sold)
		}
	})
}
