package bench_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bsmlock "github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// tputPeer is a peer library's side of the throughput row: each of the
// row's clients gets op from client, which locks and unlocks one name; the
// names are the peer's own, as many as baton's most.
type tputPeer struct {
	what   string
	client func(tb testing.TB) func(ctx context.Context, name string) error
	// name turns "<n>-<k>" into the peer's key or path.
	name func(k string) string
}

// etcdTputPeer is concurrency.Mutex on a session per client.
func etcdTputPeer(testing.TB) *tputPeer {
	root := benchName("etcd-tput-peer")
	return &tputPeer{what: "concurrency.Mutex, a session per client", name: func(k string) string { return root + "/" + k },
		client: func(tb testing.TB) func(context.Context, string) error {
			sess, err := concurrency.NewSession(etcdClient(tb, nil), concurrency.WithTTL(int(heldTTL/time.Second)))
			if err != nil {
				tb.Fatalf("concurrency.NewSession = %v", err)
			}
			tb.Cleanup(func() { sess.Close() })
			return func(ctx context.Context, name string) error {
				m := concurrency.NewMutex(sess, name)
				if err := m.Lock(ctx); err != nil {
					return err
				}
				return m.Unlock(ctx)
			}
		}}
}

// redisTputPeer is bsm/redislock on one go-redis client, retrying every
// millisecond where baton would wait.
func redisTputPeer(tb testing.TB) *tputPeer {
	rdb, _, _ := newRedisClient(tb, redisAddr(tb), false)
	prefix := redisPrefix(tb, rdb, "tput-peer")
	retry := &bsmlock.Options{RetryStrategy: bsmlock.LinearBackoff(time.Millisecond)}
	return &tputPeer{what: "bsm/redislock Obtain (1 ms retries) + Release", name: func(k string) string { return prefix + ":" + k },
		client: func(testing.TB) func(context.Context, string) error {
			locker := bsmlock.New(rdb)
			return func(ctx context.Context, name string) error {
				l, err := locker.Obtain(ctx, name, benchRedisTTL, retry)
				if err != nil {
					return err
				}
				return l.Release(ctx)
			}
		}}
}

// zkTputPeer is zk.Lock on a connection per client. zk.Lock makes its
// directories persistent; they are removed at cleanup.
func zkTputPeer(tb testing.TB) *tputPeer {
	root := "/" + benchName("zk-tput-peer")
	acl := zk.WorldACL(zk.PermAll)
	connect := func(tb testing.TB) *zk.Conn {
		conn, _, err := zk.Connect([]string{zkAddr(tb)}, zkSessionTimeout, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
		if err != nil {
			tb.Fatalf("zk.Connect = %v", err)
		}
		return conn
	}
	admin := connect(tb)
	tb.Cleanup(func() {
		defer admin.Close()
		kids, _, err := admin.Children(root)
		if err != nil {
			return
		}
		for _, k := range kids {
			_ = admin.Delete(root+"/"+k, -1)
		}
		_ = admin.Delete(root, -1)
		_ = admin.Delete(root[:strings.LastIndexByte(root, '/')], -1) // "/baton-bench", if empty
	})
	return &tputPeer{what: "go-zookeeper zk.Lock, a connection per client", name: func(k string) string { return root + "/" + k },
		client: func(tb testing.TB) func(context.Context, string) error {
			conn := connect(tb)
			tb.Cleanup(conn.Close)
			return func(_ context.Context, name string) error {
				l := zk.NewLock(conn, name, acl)
				if err := l.Lock(); err != nil {
					return err
				}
				return l.Unlock()
			}
		}}
}

// redsyncTputPeer is go-redsync on the Redlock nodes, retrying as it does
// by default (up to 32 tries, 50–250 ms apart).
func redsyncTputPeer(tb testing.TB) *tputPeer {
	addrs := redlockAddrs(tb)
	pools := make([]rsredis.Pool, 0, len(addrs))
	nodes := make([]*redis.Client, 0, len(addrs))
	for _, a := range addrs {
		n, _, _ := newRedisClient(tb, a, false)
		nodes = append(nodes, n)
		pools = append(pools, rsgoredis.NewPool(n))
	}
	prefix := fmt.Sprintf("baton-bench:tput-peer-%d:", time.Now().UnixNano())
	tb.Cleanup(func() {
		for _, n := range nodes {
			deletePrefix(n, prefix)
		}
	})
	rs := redsync.New(pools...)
	return &tputPeer{what: "go-redsync Mutex", name: func(k string) string { return prefix + k },
		client: func(testing.TB) func(context.Context, string) error {
			return func(ctx context.Context, name string) error {
				m := rs.NewMutex(name, redsync.WithExpiry(benchRedisTTL))
				if err := m.LockContext(ctx); err != nil {
					return err
				}
				ok, err := m.UnlockContext(ctx)
				if err == nil && !ok {
					err = errors.New("redsync Unlock = false")
				}
				return err
			}
		}}
}
