package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/examples/internal/embedded"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/sqllock"
)

const (
	sku        = "sku-31"
	lockName   = "stock/sku-31"
	startStock = 5
	// ttl is the lock's lease: short, so a pause outlives it in a second.
	ttl = time.Second
)

// shelf is the stock table of one round. The fence lives on the stock row
// itself (fence.Row adds fence_token and fence_owner): a reservation first
// moves the row's fence, then decrements it, in one transaction.
type shelf struct {
	fenced bool
	row    fence.Row
}

func newShelf(fenced bool) shelf {
	return shelf{fenced: fenced, row: fence.Row{Table: "stock", Dialect: fence.SQLite}}
}

func (s shelf) migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INTEGER NOT NULL);
		CREATE TABLE reservations (order_id TEXT PRIMARY KEY, sku TEXT NOT NULL, qty INTEGER NOT NULL);
		INSERT INTO stock VALUES (?, ?)`, sku, startStock); err != nil {
		return err
	}
	return s.row.Migrate(ctx, db)
}

// reserve takes qty units off the shelf for order under (token, owner).
// The availability check happened when the caller read the stock, under
// the lock: that is how the service is written, trusting its lock.
func (s shelf) reserve(ctx context.Context, db *sql.DB, token uint64, owner, order string, qty int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op after Commit; discards the decrement of a stale write
	key := []fence.Column{{Name: "sku", Value: sku}}
	if s.fenced {
		err = s.row.Update(ctx, tx, key, nil, token, owner) // only the fence moves here
	} else {
		err = fence.UnfencedRow{Row: s.row}.Update(ctx, tx, key, nil, token, owner)
	}
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE stock SET qty = qty - ? WHERE sku = ?`, qty, sku); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO reservations VALUES (?, ?, ?)`, order, sku, qty); err != nil {
		return err
	}
	return tx.Commit()
}

func stock(ctx context.Context, db *sql.DB) (int, error) {
	var qty int
	err := db.QueryRowContext(ctx, `SELECT qty FROM stock WHERE sku = ?`, sku).Scan(&qty)
	return qty, err
}

func reservations(ctx context.Context, db *sql.DB) (map[string]int, error) {
	rows, err := db.QueryContext(ctx, `SELECT order_id, qty FROM reservations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var order string
		var qty int
		if err := rows.Scan(&order, &qty); err != nil {
			return nil, err
		}
		got[order] = qty
	}
	return got, rows.Err()
}

// service is one picking service: a process of its own, with its own
// connection pool (through a Link, so the story can freeze it) and its own
// lock client.
type service struct {
	*embedded.Process
	name  string
	stock *baton.Mutex
}

func newService(ctx context.Context, dir, file, name string) (*service, error) {
	p, err := embedded.OpenProcess(ctx, dir, file, sqllock.Options{TTL: ttl})
	if err != nil {
		return nil, err
	}
	m, err := p.Locks.Mutex(lockName)
	if err != nil {
		return nil, errors.Join(err, p.Close())
	}
	return &service{Process: p, name: name, stock: m}, nil
}

func (s *service) String() string { return fmt.Sprintf("%-9s", s.name) }
