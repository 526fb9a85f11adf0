package idem_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/baton-go/baton/idem"
)

func openExampleDB() (*sql.DB, func()) {
	dir, err := os.MkdirTemp("", "idem-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(5000)&_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }
}

// Buying a shipping label once: the first Do buys it, a repeat with the
// same request key returns the recorded label.
func Example() {
	ctx := context.Background()
	db, done := openExampleDB()
	defer done()
	keys, err := idem.New(db, idem.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := keys.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	buy := func(ctx context.Context) ([]byte, error) {
		fmt.Println("buying the label")
		return []byte("label 4711"), nil
	}
	for range 2 {
		rec, err := keys.Do(ctx, "order-88:label", buy, nil)
		fmt.Println(rec.State, string(rec.Result), err)
	}
	// Output:
	// buying the label
	// SUCCESS label 4711 <nil>
	// SUCCESS label 4711 <nil>
}

// A timeout after the request left is UNKNOWN, not FAILED. The retry asks
// the supplier instead of buying again.
func ExampleStore_Do_unknown() {
	ctx := context.Background()
	db, done := openExampleDB()
	defer done()
	keys, _ := idem.New(db, idem.Options{})
	if err := keys.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	timeout := func(ctx context.Context) ([]byte, error) {
		return nil, context.DeadlineExceeded // the supplier did buy it, we never heard
	}
	lookup := func(ctx context.Context) ([]byte, idem.State, error) {
		return []byte("label 4711"), idem.Success, nil // the supplier's order lookup
	}
	_, err := keys.Do(ctx, "order-88:label", timeout, nil)
	fmt.Println("first:", errors.Is(err, idem.ErrUnknown), errors.Is(err, idem.ErrFailed))
	rec, err := keys.Do(ctx, "order-88:label", timeout, lookup)
	fmt.Println("retry:", rec.State, string(rec.Result), err, "attempts:", rec.Attempts)
	// Output:
	// first: true false
	// retry: SUCCESS label 4711 <nil> attempts: 1
}

// A supplier without a query API: the unknown waits on the manual list
// until a person resolves it.
func ExampleStore_Stuck() {
	ctx := context.Background()
	db, done := openExampleDB()
	defer done()
	keys, _ := idem.New(db, idem.Options{UnknownBudget: time.Millisecond}) // short, for the example
	if err := keys.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	keys.Do(ctx, "order-88:label", func(context.Context) ([]byte, error) {
		return nil, errors.New("connection reset")
	}, nil)
	time.Sleep(10 * time.Millisecond) // past the budget
	stuck, _ := keys.Stuck(ctx)
	for _, r := range stuck {
		fmt.Println("manual:", r.Key, r.State, r.Err)
	}
	rec, _ := keys.Resolve(ctx, "order-88:label", idem.Success, []byte("label 4711"), "on the supplier's bill")
	fmt.Println("resolved:", rec.State, string(rec.Result))
	// Output:
	// manual: order-88:label UNKNOWN connection reset
	// resolved: SUCCESS label 4711
}
