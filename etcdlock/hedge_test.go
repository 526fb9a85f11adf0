package etcdlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/faultproxy"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestKeepaliveOutlivesTwoStuckEndpoints gives the holder's etcd client
// three endpoints, two of which stop answering (blackholes that keep the
// TCP connections open, as a frozen member does). gRPC's round robin
// keeps both connections ready and puts new streams on them in turn, so a
// keepalive and its first hedge can both land on a stuck endpoint; a
// further attempt must reach the third, and the lease must live on.
func TestKeepaliveOutlivesTwoStuckEndpoints(t *testing.T) {
	var addrs []string
	var stuck []*faultproxy.Proxy
	for i := range 3 {
		p := proxy(t)
		addrs = append(addrs, p.Addr)
		if i < 2 {
			stuck = append(stuck, p)
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: addrs, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("clientv3.New(%v) = %v", addrs, err)
	}
	t.Cleanup(func() { cli.Close() })
	const ttl = 2 * time.Second
	c := newClientOn(t, cli, etcdlock.Options{TTL: ttl})
	name := uniq(t)
	l := lock(t, mutex(t, c, name), name)
	for _, p := range stuck {
		if err := p.Blackhole(""); err != nil {
			t.Fatalf("Blackhole = %v", err)
		}
		t.Cleanup(p.Heal)
	}
	// Four TTLs are six keepalive rounds: the round robin starts each
	// round's first attempt one endpoint further on, so rounds begin on
	// each stuck endpoint.
	end := time.After(4 * ttl)
	suspended := 0
	for {
		st, changed := l.Observe()
		switch st {
		case baton.Lost:
			t.Fatalf("lease Lost with one of three endpoints answering (cause %v), want it kept", context.Cause(l.Context()))
		case baton.Suspended:
			suspended++
		}
		select {
		case <-changed:
		case <-end:
			t.Logf("held for %v with two of three endpoints stuck; Suspended %d times", 4*ttl, suspended)
			return
		}
	}
}
