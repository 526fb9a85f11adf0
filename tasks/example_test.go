package tasks_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/tasks"
)

// The takeover story on SQLite: A (epoch 81) pauses past its lease, B
// (epoch 82) takes J7 over and resumes from A's checkpoint, A's late
// commit is refused. In a real runner the claimant comes from a lease:
// tasks.ClaimantOf(lease).
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "tasks-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(5000)&_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	store, err := tasks.New(db, tasks.Options{Lease: 100 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	store.Enqueue(ctx, "J7", []byte("export rows 1..1000"), 0)
	a, _ := store.Claim(ctx, tasks.Claimant{Owner: "A", Epoch: 81})
	a.Checkpoint(ctx, []byte("row 800"))

	time.Sleep(200 * time.Millisecond) // A pauses; its lease expires
	expired, _ := store.Expired(ctx, 10)
	b, err := store.Takeover(ctx, expired[0], tasks.Claimant{Owner: "B", Epoch: 82})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("B resumes from:", string(b.Task().Checkpoint))

	err = a.Complete(ctx, []byte("A's result"))
	fmt.Println("A's late commit is stale:", errors.Is(err, baton.ErrStaleToken))
	fmt.Println("B completes:", b.Complete(ctx, []byte("B's result")))
	j7, _ := store.Get(ctx, "J7")
	fmt.Println(j7.State, j7.Owner, j7.Epoch, string(j7.Result))
	// Output:
	// B resumes from: row 800
	// A's late commit is stale: true
	// B completes: <nil>
	// DONE B 82 B's result
}
