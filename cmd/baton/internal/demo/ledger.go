package demo

import (
	"context"
	"database/sql"

	"github.com/baton-go/baton/fence"
	_ "modernc.org/sqlite" // the twin stores' driver
)

// ledger is one twin of the resource: an account balance guarded by a
// fence (Table) or by nothing (Unfenced).
type ledger struct {
	label string
	table string // business table
	fence interface {
		fence.Fence
		Migrate(context.Context, fence.Querier) error
		Write(ctx context.Context, db *sql.DB, resource string, token uint64, owner string, fn func(*sql.Tx) error) error
	}
}

func demoLedgers() [2]ledger {
	return [2]ledger{
		{label: "fenced", table: "ledger", fence: fence.Table{Name: "fencing_tokens", Dialect: fence.SQLite}},
		{label: "unfenced twin", table: "ledger_unfenced", fence: fence.Unfenced{Table: fence.Table{Name: "unfenced_tokens", Dialect: fence.SQLite}}},
	}
}

func openDemoDB(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+sqliteDSN)
}

func (l ledger) balance(ctx context.Context, db *sql.DB) (int, error) {
	var b int
	err := db.QueryRowContext(ctx, "SELECT balance FROM "+l.table+" WHERE account = ?", demoAccount).Scan(&b)
	return b, err
}

// set writes a new balance under token: through the fence, in one
// transaction with the fence's advance.
func (l ledger) set(ctx context.Context, db *sql.DB, token uint64, owner, who string, balance int) error {
	return l.fence.Write(ctx, db, demoAccount, token, owner, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE "+l.table+" SET balance = ?, writer = ? WHERE account = ?", balance, who, demoAccount)
		return err
	})
}

// openDemoStores creates the twin stores in a fresh SQLite file: each
// ledger's fence table and its account row at balance 100.
func openDemoStores(ctx context.Context, path string) (*sql.DB, error) {
	db, err := openDemoDB(path)
	if err != nil {
		return nil, err
	}
	for _, l := range demoLedgers() {
		err := l.fence.Migrate(ctx, db)
		if err == nil {
			_, err = db.ExecContext(ctx, "CREATE TABLE "+l.table+" (account TEXT PRIMARY KEY, balance INTEGER NOT NULL, writer TEXT NOT NULL)")
		}
		if err == nil {
			_, err = db.ExecContext(ctx, "INSERT INTO "+l.table+" VALUES (?, 100, 'setup')", demoAccount)
		}
		if err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}
