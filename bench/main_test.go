package bench_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// etcdAddr returns the etcd server to measure: BATON_BENCH_ETCD, else the
// shared test server of scripts/servers.sh (skipping by hand, failing
// under CI when neither is set).
func etcdAddr(tb testing.TB) string {
	tb.Helper()
	if a := os.Getenv("BATON_BENCH_ETCD"); a != "" {
		return a
	}
	return testenv.Etcd(tb)
}

// zkAddr returns the ZooKeeper server to measure: BATON_BENCH_ZK, else the
// shared test server (skipping by hand, failing under CI when neither is
// set).
func zkAddr(tb testing.TB) string {
	tb.Helper()
	if a := os.Getenv("BATON_BENCH_ZK"); a != "" {
		return a
	}
	return testenv.ZK(tb)
}

// zkPackets reads zk_packets_received from the server's mntr four-letter
// word. It counts every request of every client, pings included.
func zkPackets(addr string) (int64, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("mntr")); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok && k == "zk_packets_received" {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("mntr on %s: no zk_packets_received (is mntr whitelisted?)", addr)
}

// keepAliveMethod is left out of request counts: lease keepalives are
// etcd's pings, paid per lease whatever the locks do.
const keepAliveMethod = "/etcdserverpb.Lease/LeaseKeepAlive"

// rpcCounter counts the requests a clientv3.Client sends: one per unary
// call and one per message sent on a stream (a watch create or cancel is a
// message on the shared watch stream).
type rpcCounter struct {
	mu    sync.Mutex
	calls map[string]int64
}

func newRPCCounter() *rpcCounter { return &rpcCounter{calls: make(map[string]int64)} }

func (c *rpcCounter) add(method string) {
	c.mu.Lock()
	c.calls[method]++
	c.mu.Unlock()
}

// snapshot copies the per-method counts.
func (c *rpcCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

// requests is the total without keepalives.
func (c *rpcCounter) requests() int64 {
	var n int64
	for k, v := range c.snapshot() {
		if k != keepAliveMethod {
			n += v
		}
	}
	return n
}

func (c *rpcCounter) dialOptions() []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		c.add(method)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &countedStream{ClientStream: cs, c: c, method: method}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

type countedStream struct {
	grpc.ClientStream
	c      *rpcCounter
	method string
}

func (s *countedStream) SendMsg(m any) error {
	s.c.add(s.method)
	return s.ClientStream.SendMsg(m)
}

// etcdClient returns a clientv3.Client on the etcd server whose requests
// c counts (c may be nil), closed at cleanup.
func etcdClient(tb testing.TB, c *rpcCounter) *clientv3.Client {
	tb.Helper()
	cfg := clientv3.Config{
		Endpoints:   []string{etcdAddr(tb)},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	}
	if c != nil {
		cfg.DialOptions = c.dialOptions()
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		tb.Fatalf("clientv3.New(%q) = %v", cfg.Endpoints[0], err)
	}
	tb.Cleanup(func() { cli.Close() })
	return cli
}
