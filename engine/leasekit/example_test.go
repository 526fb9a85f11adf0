package leasekit_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// mapEngine is a whole lease engine in one process, to show what an
// engine writes: the keeper's owner-checked Renew and Release, and an
// Attempts whose Try makes one attempt. A real engine does the same on
// its server (a script, a transaction) and may add the optional powers.
type mapEngine struct {
	mu      sync.Mutex
	owners  map[string]string // lock name → owner of the grant
	counter uint64            // the token source
}

func (m *mapEngine) BatchSize() int { return 100 }

func (m *mapEngine) Renew(_ context.Context, refs []keeper.Ref, _ time.Duration) ([]bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ok := make([]bool, len(refs))
	for i, r := range refs {
		ok[i] = m.owners[r.Key] == r.Owner
	}
	return ok, nil
}

func (m *mapEngine) Release(_ context.Context, refs []keeper.Ref) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range refs {
		if m.owners[r.Key] == r.Owner {
			delete(m.owners, r.Key)
		}
	}
	return nil
}

func (m *mapEngine) Begin(req *leasekit.Request) leasekit.Attempts {
	return &mapAttempts{m: m, name: req.Name}
}

type mapAttempts struct {
	m    *mapEngine
	name string
}

func (a *mapAttempts) Try(context.Context, int) (leasekit.Result, error) {
	owner := engine.NewOwnerID()
	res := leasekit.Result{Sent: time.Now(), Ref: keeper.Ref{Key: a.name, Owner: owner}}
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	if _, held := a.m.owners[a.name]; !held {
		a.m.owners[a.name] = owner
		a.m.counter++
		res.Granted, res.Token = true, a.m.counter
	}
	return res, nil
}

func (a *mapAttempts) Forget(res leasekit.Result) {
	_ = a.m.Release(context.Background(), []keeper.Ref{res.Ref})
}
func (a *mapAttempts) End(context.Context, bool) {}

// Example builds a lease engine on a map and takes its mutex: the keeper
// renews the grant, and the token is the engine's raw token + TokenFloor.
func Example() {
	o, err := leasekit.Options{TTL: time.Second, TokenFloor: 1000}.Validate("maplock")
	if err != nil {
		panic(err)
	}
	m := &mapEngine{owners: make(map[string]string)}
	k, err := keeper.New(m, keeper.Options{TTL: o.TTL, DriftMargin: o.DriftMargin, Backoff: o.Backoff})
	if err != nil {
		panic(err)
	}
	defer k.Close()
	e := &leasekit.Engine{Name: "map", Pkg: "maplock", Opts: o, Keeper: k, Store: m,
		Ctx: context.Background(), Err: func() error { return nil }}

	mu, _ := e.Mutex("orders/42")
	l, err := mu.Lock(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Token(), l.State())
	_, err = mu.TryLock(context.Background()) // another acquire, not a re-entry
	fmt.Println(err)
	_ = l.Release(context.Background())
	// Output:
	// 1001 held
	// maplock: mutex "orders/42": baton: lock held by another owner
}
