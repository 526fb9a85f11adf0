package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"log"
	"net/url"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	batonengine "github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/internal/leasetest"
	"github.com/baton-go/baton/sqllock"
)

// The README's SQL quick start on PostgreSQL: your own *sql.DB (pgx's
// driver here) gives the lock client, a *baton.Client, the type every
// engine gives; the write under the lock's fencing token is made in your
// own transaction. (Not run here: it needs a PostgreSQL server;
// TestQuickstart runs the same code against $BATON_TEST_POSTGRES.)
func Example_quickstart() {
	ctx := context.Background()
	db, err := sql.Open("pgx", "postgres://app@127.0.0.1:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// Your *sql.DB serves the locks too. Without one,
	// baton.Open(ctx, "postgres://app@127.0.0.1:5432/app",
	// baton.WithTTL(10*time.Second)) opens a client of its own.
	locks, err := sqllock.New(db, sqllock.Options{TTL: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	if err := shipOrder(ctx, locks, db, "orders/42"); err != nil {
		log.Fatal(err)
	}
}

// shipOrder takes the order's lock and marks the order shipped in the
// same transaction that advances the order's fence to the lease's token,
// then releases the lock. The orders table is the application's own:
// CREATE TABLE orders (id text PRIMARY KEY, state text NOT NULL).
func shipOrder(ctx context.Context, locks *baton.Client, db *sql.DB, order string) error {
	// The fence keeps each resource's last accepted token in the table
	// fencing_tokens, which Migrate creates (better once, at deployment);
	// the lock client creates its own table, baton_locks, at first use.
	fences := fence.Table{Dialect: fence.Postgres}
	if err := fences.Migrate(ctx, db); err != nil {
		return err
	}
	m, err := locks.Mutex(order)
	if err != nil {
		return err
	}
	lease, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	// The write carries the token. A lost lease cancels lease.Context(),
	// which stops the write; a holder that has not noticed yet (paused,
	// cut off) and writes late is refused with baton.ErrStaleToken, its
	// transaction rolled back.
	err = fences.Write(lease.Context(), db, order, lease.Token(), lease.Owner(), func(tx *sql.Tx) error {
		_, err := tx.ExecContext(lease.Context(), `UPDATE orders SET state = 'shipped' WHERE id = $1`, order)
		return err
	})
	return errors.Join(err, lease.Release(context.Background()))
}

// TestQuickstart runs the quick start's code against the test server, in
// a schema of its own (its search_path), twice: each run marks the order
// shipped under a larger token (the fence holds the last one) and
// releases the lock, so that a TryLock right after gets it.
func TestQuickstart(t *testing.T) {
	db, quickstartURL := quickstartSchema(t, testenv.Postgres(t))
	ctx := opCtx(t, 30*time.Second)
	const order = "orders/42"
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id text PRIMARY KEY, state text NOT NULL);
		INSERT INTO orders VALUES ('orders/42', 'paid')`); err != nil {
		t.Fatalf("create orders = %v", err)
	}
	fences := fence.Table{Dialect: fence.Postgres}
	// Run 1 on a client over db, as the example; run 2 on one that
	// baton.Open made from the same URL: the same code on either.
	own := newClient(t, db, sqllock.Options{TTL: 10 * time.Second})
	opened, err := baton.Open(ctx, quickstartURL, baton.WithTTL(10*time.Second))
	if err != nil {
		t.Fatalf("baton.Open = %v", err)
	}
	t.Cleanup(func() { _ = opened.Close() })
	var last uint64
	for i, locks := range []*baton.Client{own, opened} {
		run := i + 1
		if err := shipOrder(ctx, locks, db, order); err != nil {
			t.Fatalf("run %d: shipOrder = %v", run, err)
		}
		var state string
		if err := db.QueryRowContext(ctx, `SELECT state FROM orders WHERE id = $1`, order).Scan(&state); err != nil || state != "shipped" {
			t.Fatalf("run %d: order state = %q, %v; want shipped", run, state, err)
		}
		token, owner, err := fences.Current(ctx, db, order)
		if err != nil || token <= last || owner == "" {
			t.Fatalf("run %d: fence = (%d, %q), %v; want a token above %d and an owner", run, token, owner, err, last)
		}
		last = token
	}
	m, err := newClient(t, db, sqllock.Options{}).Mutex(order)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", order, err)
	}
	leasetest.NextTokenAbove(t, m, last)
}

// quickstartSchema opens the database at dsn with a fresh schema first on
// its search_path, so that the quick start's fixed table names (orders,
// fencing_tokens, baton_locks) are its own; the schema is dropped at the
// end of the test. It returns the URL it opened too.
func quickstartSchema(t *testing.T, dsn string) (*sql.DB, string) {
	t.Helper()
	admin := openDB(t, "pgx", dsn)
	schema := "quickstart_" + strings.ToLower(batonengine.NewOwnerID()[:12])
	if _, err := admin.ExecContext(t.Context(), `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("CREATE SCHEMA %s = %v", schema, err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("DROP SCHEMA %s = %v", schema, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("url.Parse(BATON_TEST_POSTGRES) = %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return openDB(t, "pgx", u.String()), u.String()
}
