// Command anyengine runs one function on any engine baton serves, with
// no line specific to an engine: the engines' packages are imported for
// their side effect (they register their URL schemes, as database/sql
// drivers do), and everything else is package baton.
//
//	go run ./anyengine redis://127.0.0.1:6379 postgres://u@db/app mem://local k8s://?kubeconfig=$HOME/.kube/config
//
// For each URL it locks a mutex, checks that the next grant's fencing token
// is greater, inspects the lock and checks that this host and process are
// shown as its holder, and releases it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/baton-go/baton"
	_ "github.com/baton-go/baton/etcdlock"
	_ "github.com/baton-go/baton/kubelock"
	_ "github.com/baton-go/baton/memlock"
	_ "github.com/baton-go/baton/redislock"
	_ "github.com/baton-go/baton/redlock"
	_ "github.com/baton-go/baton/sqllock"
	_ "github.com/baton-go/baton/sqllock/sqlite"
	_ "github.com/baton-go/baton/zklock"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: anyengine URL...")
		os.Exit(64)
	}
	code := 0
	for i, url := range os.Args[1:] {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := Round(ctx, url, "anyengine/demo")
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "URL %d: %v\n", i+1, err) // the URL may hold a password
			code = 1
			continue
		}
		fmt.Printf("%-8s tokens %d < %d, held by %s pid %d (%s)\n", r.Engine, r.First, r.Second, r.Holder.Host, r.Holder.PID, r.Holder.Program)
	}
	os.Exit(code)
}

// Report is what one round saw.
type Report struct {
	Engine        string
	First, Second uint64        // the two grants' tokens
	Holder        baton.Process // who Inspect said held the lock
}

// Round opens url, takes the mutex name twice in turn and inspects it
// while held. It fails when the second token is not greater than the
// first or when Inspect does not show this process as the one holder.
func Round(ctx context.Context, url, name string) (r Report, err error) {
	c, err := baton.Open(ctx, url)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	r.Engine = c.Engine()
	m, err := c.Mutex(name)
	if err != nil {
		return r, err
	}
	first, err := m.Lock(ctx)
	if err != nil {
		return r, err
	}
	r.First = first.Token()
	if err := first.Release(ctx); err != nil {
		return r, err
	}
	second, err := m.Lock(ctx)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, second.Release(ctx)) }()
	r.Second = second.Token()
	if r.Second <= r.First {
		return r, fmt.Errorf("token %d after %d: tokens must rise", r.Second, r.First)
	}
	in, err := c.Inspect(ctx, name)
	if err != nil {
		return r, err
	}
	if len(in.Holders) != 1 {
		return r, fmt.Errorf("inspect shows %d holders, want 1: %+v", len(in.Holders), in)
	}
	r.Holder = in.Holders[0].Process
	host, _ := os.Hostname()
	if r.Holder.Host != host || r.Holder.PID != os.Getpid() {
		return r, fmt.Errorf("inspect shows holder %s pid %d, want this process (%s pid %d)", r.Holder.Host, r.Holder.PID, host, os.Getpid())
	}
	return r, nil
}
