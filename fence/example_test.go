package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"

	_ "modernc.org/sqlite"
)

// openExampleDB opens a throwaway SQLite database with the recommended DSN.
func openExampleDB() (*sql.DB, func()) {
	dir, err := os.MkdirTemp("", "fence-example")
	if err != nil {
		log.Fatal(err)
	}
	dsn := "file:" + filepath.Join(dir, "exports.db") + "?_pragma=busy_timeout(5000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		log.Fatal(err)
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }
}

// The export-88 story: A held the lock with token 701 and paused; B
// was granted 702 and published the result. A's late publish is rejected
// by the resource and changes nothing. In a real program token and owner
// come from the lease: lease.Token(), lease.Owner().
func Example() {
	ctx := context.Background()
	db, done := openExampleDB()
	defer done()

	fences := fence.Table{Dialect: fence.SQLite} // the table "fencing_tokens"
	if err := fences.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE exports (id TEXT PRIMARY KEY, pointer TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}

	publish := func(token uint64, owner, pointer string) error {
		return fences.Write(ctx, db, "export-88", token, owner, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO exports (id, pointer) VALUES ('export-88', ?)
				ON CONFLICT (id) DO UPDATE SET pointer = excluded.pointer`, pointer)
			return err
		})
	}

	fmt.Println("B publishes with 702:", publish(702, "B", "export-88/702.out"))
	err := publish(701, "A", "export-88/701.out")
	fmt.Println("A's late publish with 701 is stale:", errors.Is(err, baton.ErrStaleToken))
	var stale *fence.StaleError
	if errors.As(err, &stale) {
		fmt.Println("the resource had accepted:", stale.StoredToken, stale.StoredOwner)
	}

	var pointer string
	if err := db.QueryRowContext(ctx, `SELECT pointer FROM exports WHERE id = 'export-88'`).Scan(&pointer); err != nil {
		log.Fatal(err)
	}
	fmt.Println("published:", pointer)
	// Output:
	// B publishes with 702: <nil>
	// A's late publish with 701 is stale: true
	// the resource had accepted: 702 B
	// published: export-88/702.out
}

// Advance inside a transaction you manage yourself: fence first, then your
// writes, then commit; on a stale token roll back.
func ExampleTable_Advance() {
	ctx := context.Background()
	db, done := openExampleDB()
	defer done()

	d, err := fence.DialectOf(db) // or set fence.SQLite / fence.Postgres directly
	if err != nil {
		log.Fatal(err)
	}
	fences := fence.Table{Dialect: d}
	if err := fences.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INTEGER NOT NULL)`); err != nil {
		log.Fatal(err)
	}

	adjust := func(token uint64, owner string, qty int) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // a no-op after Commit
		if err := fences.Advance(ctx, tx, "inventory/sku-31", token, owner); err != nil {
			return err // stale: the deferred Rollback discards the transaction
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO stock (sku, qty) VALUES ('sku-31', ?)
			ON CONFLICT (sku) DO UPDATE SET qty = excluded.qty`, qty); err != nil {
			return err
		}
		return tx.Commit()
	}

	fmt.Println("B (502):", adjust(502, "B", 35))
	fmt.Println("A (501):", adjust(501, "A", 39))
	token, owner, _ := fences.Current(ctx, db, "inventory/sku-31")
	fmt.Println("fence:", token, owner)
	// Output:
	// B (502): <nil>
	// A (501): fence: stale write to "inventory/sku-31": token 501 (owner "A") after token 502 (owner "B"): baton: stale fencing token
	// fence: 502 B
}

// The unfenced twin runs the same story and lets the late write land: what
// a negative control must show.
func ExampleUnfenced() {
	ctx := context.Background()
	db, done := openExampleDB()
	defer done()

	twin := fence.Unfenced{Table: fence.Table{Name: "unfenced_tokens", Dialect: fence.SQLite}}
	if err := twin.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	noop := func(*sql.Tx) error { return nil }
	fmt.Println("B (502):", twin.Write(ctx, db, "export-88", 502, "B", noop))
	fmt.Println("A (501):", twin.Write(ctx, db, "export-88", 501, "A", noop))
	token, owner, _ := twin.Current(ctx, db, "export-88")
	fmt.Println("recorded:", token, owner)
	// Output:
	// B (502): <nil>
	// A (501): <nil>
	// recorded: 501 A
}

// Scheme 1: the fence as two columns of the business row. The late
// update with the older token affects no row and is reported as stale.
func ExampleRow_Update() {
	ctx := context.Background()
	db, done := openExampleDB()
	defer done()

	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL);
		INSERT INTO orders VALUES ('1001', 'NEW')`); err != nil {
		log.Fatal(err)
	}
	orders := fence.Row{Table: "orders", Dialect: fence.SQLite}
	if err := orders.Migrate(ctx, db); err != nil { // adds fence_token, fence_owner
		log.Fatal(err)
	}
	setStatus := func(token uint64, owner, status string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		key := []fence.Column{{Name: "id", Value: "1001"}}
		if err := orders.Update(ctx, tx, key, []fence.Column{{Name: "status", Value: status}}, token, owner); err != nil {
			return err
		}
		return tx.Commit()
	}
	fmt.Println("B (502) pays:", setStatus(502, "B", "PAID"))
	fmt.Println("A (501) cancels late, stale:", errors.Is(setStatus(501, "A", "CANCELLED"), baton.ErrStaleToken))
	var status string
	_ = db.QueryRowContext(ctx, `SELECT status FROM orders WHERE id = '1001'`).Scan(&status)
	fmt.Println("status:", status)
	// Output:
	// B (502) pays: <nil>
	// A (501) cancels late, stale: true
	// status: PAID
}

// The object-store pattern: each grant uploads its own object, only the
// current token's pointer is published, and the stale upload is an orphan.
func ExamplePublisher() {
	ctx := context.Background()
	db, done := openExampleDB()
	defer done()
	dir, err := os.MkdirTemp("", "fence-objects")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	p := fence.Publisher{Store: fence.DirStore{Root: dir}, Dialect: fence.SQLite}
	if err := p.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	_, err = p.Write(ctx, db, "export-88", 702, "B", strings.NewReader("B's result"))
	fmt.Println("B (702) publishes:", err)
	_, err = p.Write(ctx, db, "export-88", 701, "A", strings.NewReader("A's result"))
	fmt.Println("A (701) publishes late, stale:", errors.Is(err, baton.ErrStaleToken))
	ptr, _ := p.Published(ctx, db, "export-88")
	fmt.Println("published token:", ptr.Token, ptr.Owner)
	orphans, _ := p.Orphans(ctx, db, "export-88", time.Now().Add(time.Second)) // grace passed
	for _, o := range orphans {
		fmt.Println("orphan of token 701:", strings.HasPrefix(o.Name, "export-88/701-"))
	}
	// Output:
	// B (702) publishes: <nil>
	// A (701) publishes late, stale: true
	// published token: 702 B
	// orphan of token 701: true
}
