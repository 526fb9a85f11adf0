package drill_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/drill/scenario"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/redislock"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/sqllock"
	"github.com/baton-go/baton/zklock"

	"github.com/redis/go-redis/v9"
)

// The scenario package's Targets for the drills' engines. A holder child
// is this test binary re-executed with the engine and its endpoint in
// the environment; TestMain sees scenario.IsHolder and builds the same
// Target's Open from them (scenarioOpen), without a testing.T.
const (
	scenarioEngineEnv   = "BATON_DRILL_SCENARIO_ENGINE"
	scenarioEndpointEnv = "BATON_DRILL_SCENARIO_ENDPOINT"
)

// scenarioHolderMain is the holder child's main.
func scenarioHolderMain() int {
	engine, endpoint := os.Getenv(scenarioEngineEnv), os.Getenv(scenarioEndpointEnv)
	t, err := scenarioBase(engine, endpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenario holder:", err)
		return 2
	}
	return scenario.HolderMain(t)
}

// scenarioClient adapts an engine's client to scenario.Client.
type scenarioClient struct {
	mutex func(string) (baton.Locker, error)
	close func() error
}

func (c scenarioClient) Mutex(name string) (baton.Locker, error) { return c.mutex(name) }
func (c scenarioClient) Close() error                            { return c.close() }

// scenarioBase is engine's Target without Scan and Holder: what a child
// needs. endpoint is as the drills' holder children take it.
func scenarioBase(engine, endpoint string) (scenario.Target, error) {
	t := scenario.Target{Engine: engine, Family: scenario.Lease, TTL: sqlTTL}
	switch engine {
	case "zk":
		t.Family, t.TTL, t.Addrs = scenario.Queue, zkTimeout, []string{endpoint}
		t.Open = func(ctx context.Context, dial []string) (scenario.Client, error) {
			c, err := zklock.Dial(ctx, or(dial, t.Addrs), zklock.Options{SessionTimeout: zkTimeout})
			if err != nil {
				return nil, err
			}
			return scenarioClient{queueMutex(c), closeOK(c.Close)}, nil
		}
	case "etcd":
		t.Family, t.TTL, t.Addrs = scenario.Queue, etcdTTL, []string{strings.TrimPrefix(endpoint, "http://")}
		t.Open = func(ctx context.Context, dial []string) (scenario.Client, error) {
			cli, err := clientv3.New(clientv3.Config{Endpoints: or(dial, t.Addrs), DialTimeout: 5 * time.Second, Logger: nopZap})
			if err != nil {
				return nil, err
			}
			c, err := etcdlock.New(cli, etcdlock.Options{TTL: etcdTTL})
			if err != nil {
				cli.Close()
				return nil, err
			}
			return scenarioClient{queueMutex(c), func() error { err := closeOK(c.Close)(); cli.Close(); return err }}, nil
		}
	case "postgres", "mysql", "sqlite":
		if engine != "sqlite" {
			t.Addrs = []string{serverAddr(engine, endpoint)}
		}
		t.Open = func(ctx context.Context, dial []string) (scenario.Client, error) {
			ep := endpoint
			if len(dial) > 0 {
				var err error
				if ep, err = withServer(engine, endpoint, dial[0], ""); err != nil {
					return nil, err
				}
			}
			driver, dsn := sqlDriverDSN(engine, ep)
			db, err := sql.Open(driver, dsn)
			if err != nil {
				return nil, err
			}
			// A proxied client does not LISTEN: the process's one LISTEN
			// connection must not ride on a link a drill cuts.
			c, err := sqllock.New(db, sqllock.Options{TTL: sqlTTL, NoListen: len(dial) > 0})
			if err == nil {
				err = sqlWarm(ctx, c) // schema checked, server identified
			}
			if err != nil {
				db.Close()
				return nil, err
			}
			return scenarioClient{sqlMutex(c), func() error { err := closeOK(c.Close)(); db.Close(); return err }}, nil
		}
	case "redis", "redlock":
		prefix, addrs := splitRedisEndpoint(endpoint)
		t.TTL, t.Addrs = redisTTL, addrs
		t.Open = func(ctx context.Context, dial []string) (scenario.Client, error) {
			var rdbs []*redis.Client
			for _, a := range or(dial, addrs) {
				rdbs = append(rdbs, newRedis(a, 0))
			}
			closeAll := func() {
				for _, r := range rdbs {
					r.Close()
				}
			}
			var c scenarioClient
			if engine == "redis" {
				rc, err := redislock.New(rdbs[0], redislock.Options{TTL: redisTTL, Prefix: prefix})
				if err != nil {
					closeAll()
					return nil, err
				}
				c = scenarioClient{lockerOf(rc.Mutex), closeOK(rc.Close)}
			} else {
				nodes := make([]redis.UniversalClient, len(rdbs))
				for i, r := range rdbs {
					nodes[i] = r
				}
				rc, err := redlock.New(nodes, redlock.Options{TTL: redisTTL, Prefix: prefix, NodeTimeout: redlockNodeTimeout})
				if err != nil {
					closeAll()
					return nil, err
				}
				c = scenarioClient{lockerOf(rc.Mutex), closeOK(rc.Close)}
			}
			inner := c.close
			c.close = func() error { err := inner(); closeAll(); return err }
			return c, nil
		}
	default:
		return t, fmt.Errorf("unknown engine %q", engine)
	}
	return t, nil
}

// or returns a, or b when a is empty.
func or(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return b
}

// scenarioTarget is the Target of the drills' engine e: the holder child
// re-executes this binary, and Scan is the engine's orphan scan.
func scenarioTarget(t *testing.T, e *engine) scenario.Target {
	t.Helper()
	tg, err := scenarioBase(e.name, e.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tg.Holder = func([]string) *exec.Cmd {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), scenarioEngineEnv+"="+e.name, scenarioEndpointEnv+"="+e.endpoint)
		return cmd
	}
	tg.Scan = e.scan
	if e.name == "zk" {
		tg.Clean = func(ctx context.Context, prefix string) error { return zkDeleteTree(e.endpoint, "/"+prefix) }
	}
	return tg
}

// zkDeleteTree deletes root and everything under it: the lock
// directories a drill's names leave on ZooKeeper.
func zkDeleteTree(server, root string) error {
	conn, _, err := zk.Connect([]string{server}, zkTimeout, zk.WithLogger(quietZK{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	var del func(p string) error
	del = func(p string) error {
		kids, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := del(p + "/" + k); err != nil {
				return err
			}
		}
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	}
	return del(root)
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// scenarioEngine returns the drills' engine of that name.
func scenarioEngine(t *testing.T, name string) *engine {
	switch name {
	case "zk":
		return zkEngine(t)
	case "etcd":
		return etcdEngine(t)
	case "sqlite":
		return sqlEngine(t, "sqlite", filepath.Join(t.TempDir(), "locks.db"), false)
	case "postgres":
		u, err := url.Parse(testenv.Postgres(t))
		if err != nil {
			t.Fatal(err)
		}
		return sqlEngine(t, "postgres", u.String(), true)
	case "mysql":
		cfg, err := mysql.ParseDSN(testenv.MySQL(t))
		if err != nil {
			t.Fatal(err)
		}
		cfg.InterpolateParams = true
		return sqlEngine(t, "mysql", cfg.FormatDSN(), true)
	case "redis":
		return redisEngine(t)
	case "redlock":
		return redlockEngine(t)
	}
	t.Fatalf("unknown engine %q", name)
	return nil
}
