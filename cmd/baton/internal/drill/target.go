package drill

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/cmd/baton/internal/inspect"
	"github.com/baton-go/baton/drill/scenario"
)

// Environment of a drill's holder child: the backend it rebuilds its
// Target from (credentials included, which is why it is not in argv),
// its engine, and the client settings.
const (
	envDrillBackend  = "BATON_DRILL_BACKEND"
	envDrillEngine   = "BATON_DRILL_ENGINE"
	envDrillEmbedded = "BATON_DRILL_EMBEDDED"
	envDrillTTL      = "BATON_DRILL_TTL"
	envDrillConnect  = "BATON_DRILL_CONNECT_TIMEOUT"
)

// drillTarget connects an admin client to cfg's backend — which proves it
// reachable, creates the SQL schema, and lists what a scenario leaves
// behind — and returns the Target of the deployment and its close. It
// sets cfg.TTL to the TTL the server really gives (Backend.ServerTTL).
func drillTarget(ctx context.Context, env *cli.Env, cfg *drillConfig) (scenario.Target, func(), error) {
	admin, err := backend.Open(ctx, env, &cfg.Config, cfg.prefix)
	if err != nil {
		return scenario.Target{}, nil, err
	}
	ttl, err := admin.ServerTTL(ctx, &cfg.Config)
	if err != nil {
		admin.Close()
		return scenario.Target{}, nil, err
	}
	if ttl != cfg.TTL {
		env.Note("drill: --ttl %v: the server gives its clients %v; the drill uses %v", cfg.TTL, ttl, ttl)
		cfg.TTL = ttl // the clients ask for what they get: no note per client
	}
	t, err := newTarget(env, cfg.Config, admin.Engine)
	if err != nil {
		admin.Close()
		return scenario.Target{}, nil, err
	}
	t.Scan = scanOf(admin, t.Family)
	t.Clean = admin.DrillClean()
	return t, admin.Close, nil
}

// newTarget returns the Target of cfg's backend for the engine (without
// Scan, which needs a connection): its clients and holder children
// connect with cfg's TTL and connect timeout.
func newTarget(env *cli.Env, cfg backend.Config, engine string) (scenario.Target, error) {
	t := scenario.Target{Engine: engine, Family: scenario.Lease, TTL: cfg.TTL}
	if engine == "zk" || engine == "etcd" {
		t.Family = scenario.Queue // every waiter is an entry on the server
	}
	orig := cfg.URL.Orig
	if engine != "sqlite" {
		var err error
		if t.Addrs, err = backend.DialHosts(cfg.URL); err != nil {
			return t, err
		}
		// The clients dial fault proxies on 127.0.0.1: TLS must still
		// verify the servers by the name the URL gives them.
		cfg.TLSServerName, _, _ = net.SplitHostPort(t.Addrs[0])
	}
	t.Open = func(ctx context.Context, dial []string) (scenario.Client, error) {
		c := cfg
		c.SetBackend(withHosts(orig, dial))
		b, err := backend.Open(ctx, env, &c, "drill")
		if err != nil {
			return nil, err
		}
		return drillClient{b}, nil
	}
	t.Holder = func(dial []string) *exec.Cmd {
		self, err := os.Executable()
		if err != nil {
			self = os.Args[0]
		}
		cmd := exec.Command(self, HolderCmd)
		cmd.Env = append(env.Environ(),
			envDrillBackend+"="+orig,
			envDrillEngine+"="+engine,
			envDrillEmbedded+"="+fmt.Sprint(cfg.Embedded),
			envDrillTTL+"="+cfg.TTL.String(),
			envDrillConnect+"="+cfg.ConnectTimeout.String())
		// A holder dies with its drill, whatever happens to the drill.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd
	}
	return t, nil
}

// drillClient is one connected client of a drill: a backend of its own.
type drillClient struct{ b *backend.Backend }

func (c drillClient) Mutex(name string) (baton.Locker, error) {
	return c.b.Locker(name, backend.ModeMutex, 0)
}

func (c drillClient) Close() error { c.b.Close(); return nil }

// HolderMain is the holder child of a drill: it rebuilds the Target
// from its environment and hands over to the scenario's holder, whose
// history is this process's stdout (notes go to stderr).
func HolderMain(env *cli.Env, args []string) int {
	if len(args) > 0 || !scenario.IsHolder() {
		return env.Fail(cli.Usagef("%s is a drill's holder process: baton drill starts it", HolderCmd))
	}
	cfg := backend.Config{Embedded: env.Getenv(envDrillEmbedded) == "true"}
	var err error
	if cfg.TTL, err = time.ParseDuration(env.Getenv(envDrillTTL)); err != nil {
		return env.Fail(cli.Usagef("%s: %v", envDrillTTL, err))
	}
	if cfg.ConnectTimeout, err = time.ParseDuration(env.Getenv(envDrillConnect)); err != nil {
		return env.Fail(cli.Usagef("%s: %v", envDrillConnect, err))
	}
	cfg.SetBackend(env.Getenv(envDrillBackend))
	if err := backend.Check(&cfg); err != nil {
		return env.Fail(err)
	}
	t, err := newTarget(env, cfg, env.Getenv(envDrillEngine))
	if err != nil {
		return env.Fail(err)
	}
	return scenario.HolderMain(t)
}

// withHosts returns raw with its host list replaced by dial (raw itself
// when dial is empty): credentials, path and query are kept.
func withHosts(raw string, dial []string) string {
	if len(dial) == 0 {
		return raw
	}
	head, _, tail := backend.SplitAuthority(raw)
	return head + strings.Join(dial, ",") + tail
}

// scanOf returns the Target.Scan of b: every entry its Inspect lists
// under a name, as "role/mode/owner" (a queue entry's owner is its
// name), but a lease engine's dead waiter: a SQL waiter's intent row
// past its deadline, whose waiter is gone and which nothing reads any
// more (the engine's own orphan scan does not list it either).
func scanOf(b *backend.Backend, family scenario.Family) func(ctx context.Context, name string) ([]string, error) {
	return func(ctx context.Context, name string) ([]string, error) {
		in, err := b.Client.Inspect(ctx, name)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, part := range inspect.Parts(in) {
			for _, e := range part.Entries {
				if part.Role == "waiting" && e.Dead && family == scenario.Lease {
					continue
				}
				out = append(out, part.Role+"/"+e.Mode+"/"+e.Owner)
			}
		}
		return out, nil
	}
}
