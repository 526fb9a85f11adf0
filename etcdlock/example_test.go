package etcdlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-go/baton/etcdlock"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func Example() {
	// server.Endpoint is this test binary's embedded etcd; use your own
	// endpoints (etcdlock.ParseURL reads "etcd://h1:2379,h2:2379").
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{server.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()
	c, err := etcdlock.New(cli, etcdlock.Options{TTL: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	m, err := c.Mutex("example/nightly-report")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Pass l.Token() with every write to the resource, and stop when
	// l.Context() ends (the lease was lost).
	fmt.Println(l.State(), l.Token() > 0)
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(l.State())
	// Output:
	// held true
	// released
}
