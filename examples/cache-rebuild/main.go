// Command cache-rebuild tells the thundering-herd story of a cached price
// list: an efficiency lock lets one reader rebuild while the others serve
// the stale value, and when the lock's database is unreachable the
// readers degrade to stale data instead of stampeding the origin.
//
//	cd examples && go run ./cache-rebuild
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/examples/internal/embedded"
	"github.com/baton-go/baton/examples/internal/story"
	"github.com/baton-go/baton/sqllock"
)

func main() { story.Main("cache-rebuild", run) }

const (
	lockName       = "cache/price-list"
	nodes          = 4
	readersPerNode = 5
)

// Herd is how one herd of readers was served.
type Herd struct {
	Rebuilds int            // rebuilds of the origin during the herd
	Served   map[served]int // how many reads were answered each way
	LockErr  error          // the first lock error a reader got, if any
}

// Result is the three herds, for the test to check.
type Result struct {
	Healthy   Herd // the lock backend answers
	Down      Herd // the lock backend is unreachable: serve stale
	DownNaive Herd // the same, with readers that rebuild when the lock fails
	Rebuilds  int  // rebuilds over the first two herds
}

// node is one application server: its own connections to the lock
// database (through a Link, so the story can cut them) and lock client.
type node struct {
	*embedded.Process
	mu fixedLocker
}

func newNode(ctx context.Context, dir string) (*node, error) {
	// The default TTL: nothing here waits for a lease to expire, and each
	// acquire attempt may take TTL/3, which a herd on one SQLite file
	// needs under load.
	p, err := embedded.OpenProcess(ctx, dir, "locks.db", sqllock.Options{})
	if err != nil {
		return nil, err
	}
	n := &node{Process: p}
	m, err := n.Locks.Mutex(lockName)
	if err != nil {
		return nil, errors.Join(err, n.Close())
	}
	var ok bool
	if n.mu, ok = baton.As[fixedLocker](m); !ok {
		return nil, errors.Join(errors.New("the SQL mutex has no TryLockFor"), n.Close())
	}
	return n, nil
}

func run(ctx context.Context, w io.Writer, dir string) (res Result, err error) {
	t := story.New(w)
	var all []*node
	defer func() {
		for _, n := range all {
			err = errors.Join(err, n.Close())
		}
	}()
	for range nodes {
		n, err := newNode(ctx, dir)
		if err != nil {
			return res, err
		}
		all = append(all, n)
	}
	c, o := &cache{version: 1}, &origin{}
	t.Say("price list v1 cached on %d app nodes × %d readers; a rebuild costs %v of database time; efficiency lock %q",
		nodes, readersPerNode, rebuildTime, lockName)

	t.Title("the cache entry expires; %d readers arrive at once", nodes*readersPerNode)
	c.expire()
	if res.Healthy, err = herd(ctx, t, c, o, all, false); err != nil {
		return res, err
	}
	t.Title("it expires again, and the lock database is unreachable from every node")
	c.expire()
	for _, n := range all {
		n.Link.Cut()
	}
	if res.Down, err = herd(ctx, t, c, o, all, false); err != nil {
		return res, err
	}
	res.Rebuilds = int(o.rebuilds.Load())
	t.Say("rebuilds so far: %d", res.Rebuilds)

	t.Title("negative control: the same outage with readers that rebuild when the lock fails")
	if res.DownNaive, err = herd(ctx, t, c, o, all, true); err != nil {
		return res, err
	}
	return res, nil
}

// herd sends every node's readers at once and tells how they were served.
func herd(ctx context.Context, t *story.Teller, c *cache, o *origin, all []*node, naive bool) (Herd, error) {
	before := o.rebuilds.Load()
	start := make(chan struct{})
	var mu sync.Mutex
	h := Herd{Served: map[served]int{}}
	var errs []error
	var wg sync.WaitGroup
	for _, n := range all {
		for range readersPerNode {
			wg.Go(func() {
				<-start
				how, lockErr, err := read(ctx, c, o, n.mu, naive)
				mu.Lock()
				defer mu.Unlock()
				h.Served[how]++
				if h.LockErr == nil {
					h.LockErr = lockErr
				}
				errs = append(errs, err)
			})
		}
	}
	began := time.Now()
	close(start)
	wg.Wait()
	h.Rebuilds = int(o.rebuilds.Load() - before)
	if h.LockErr != nil {
		t.Say("a reader's TryLockFor: %v", h.LockErr)
	}
	var how []string
	for s := fresh; s <= stampede; s++ {
		if h.Served[s] > 0 {
			how = append(how, fmt.Sprintf("%d %v", h.Served[s], s))
		}
	}
	v, _ := c.get()
	t.Say("%d rebuild(s) of the origin in %v; reads served: %s; cache now v%d",
		h.Rebuilds, time.Since(began).Round(10*time.Millisecond), strings.Join(how, ", "), v)
	return h, errors.Join(errs...)
}
