package main

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
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/drill/scenario"
)

// Environment of a drill's holder child: the backend it rebuilds its
// Target from (credentials included, which is why it is not in argv) and
// the client settings.
const (
	envDrillBackend  = "BATON_DRILL_BACKEND"
	envDrillEmbedded = "BATON_DRILL_EMBEDDED"
	envDrillTTL      = "BATON_DRILL_TTL"
	envDrillConnect  = "BATON_DRILL_CONNECT_TIMEOUT"
)

// drillTarget connects an admin client to cfg's backend — which proves it
// reachable, creates the SQL schema, and lists what a scenario leaves
// behind — and returns the Target of the deployment and its close. It
// sets cfg.ttl to the TTL the server really gives (serverTTL).
func drillTarget(ctx context.Context, cfg *drillConfig) (scenario.Target, func(), error) {
	u, err := splitURL(cfg.backend)
	if err != nil {
		return scenario.Target{}, nil, err
	}
	admin, err := openBackend(ctx, &cfg.runConfig, cfg.prefix)
	if err != nil {
		return scenario.Target{}, nil, err
	}
	ttl, err := serverTTL(ctx, cfg.runConfig, admin)
	if err != nil {
		admin.close()
		return scenario.Target{}, nil, err
	}
	if ttl != cfg.ttl {
		note("drill: --ttl %v: the server gives its clients %v; the drill uses %v", cfg.ttl, ttl, ttl)
		cfg.ttl = ttl // the clients ask for what they get: no note per client
	}
	t := newTarget(cfg.runConfig, u, admin.engine)
	t.Scan = scanOf(admin, t.Family)

	t.Clean = drillClean(cfg, u, admin)
	return t, admin.close, nil
}

// newTarget returns the Target of the backend u for the engine (without
// Scan, which needs a connection): its clients and holder children
// connect with cfg's TTL and connect timeout.
func newTarget(cfg runConfig, u engineURL, engine string) scenario.Target {
	t := scenario.Target{Engine: engine, Family: scenario.Lease, TTL: cfg.ttl}
	if engine == "zk" || engine == "etcd" {
		t.Family = scenario.Queue // every waiter is an entry on the server
	}
	if engine != "sqlite" {
		t.Addrs = urlHosts(u)
		// The clients dial fault proxies on 127.0.0.1: TLS must still
		// verify the servers by the name the URL gives them.
		cfg.tlsServerName, _, _ = net.SplitHostPort(t.Addrs[0])
	}
	t.Open = func(ctx context.Context, dial []string) (scenario.Client, error) {
		c := cfg
		c.backend = withHosts(u.orig, dial)
		b, err := openBackend(ctx, &c, "drill")
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
		cmd := exec.Command(self, drillHolderCmd)
		cmd.Env = append(os.Environ(),
			envDrillBackend+"="+u.orig,
			envDrillEmbedded+"="+fmt.Sprint(cfg.embedded),
			envDrillTTL+"="+cfg.ttl.String(),
			envDrillConnect+"="+cfg.connectTimeout.String())
		// A holder dies with its drill, whatever happens to the drill.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd
	}
	return t
}

// drillClient is one connected client of a drill: a backend of its own.
type drillClient struct{ b *backend }

func (c drillClient) Mutex(name string) (baton.Locker, error) { return c.b.locker(name, modeMutex, 0) }

func (c drillClient) Close() error { c.b.close(); return nil }

// drillHolderMain is the holder child of a drill: it rebuilds the Target
// from its environment and hands over to the scenario's holder, whose
// history is this process's stdout (notes go to stderr).
func drillHolderMain(args []string) int {
	if len(args) > 0 || !scenario.IsHolder() {
		return fail(cli.Usagef("%s is a drill's holder process: baton drill starts it", drillHolderCmd))
	}
	cfg := runConfig{backend: os.Getenv(envDrillBackend), embedded: os.Getenv(envDrillEmbedded) == "true"}
	var err error
	if cfg.ttl, err = time.ParseDuration(os.Getenv(envDrillTTL)); err != nil {
		return fail(cli.Usagef("%s: %v", envDrillTTL, err))
	}
	if cfg.connectTimeout, err = time.ParseDuration(os.Getenv(envDrillConnect)); err != nil {
		return fail(cli.Usagef("%s: %v", envDrillConnect, err))
	}
	u, err := splitURL(cfg.backend)
	if err != nil {
		return fail(err)
	}
	if _, err := engineOf(u); err != nil {
		return fail(err)
	}
	return scenario.HolderMain(newTarget(cfg, u, engineName(u)))
}

// engineName is the BATON_ENGINE of u's scheme, as its backend reports
// it, without connecting.
func engineName(u engineURL) string {
	switch u.scheme {
	case "etcds":
		return "etcd"
	case "rediss":
		return "redis"
	}
	if s := sqlEngine(u.scheme); s != "" {
		return s
	}
	return u.scheme
}

// withHosts returns raw with its host list replaced by dial (raw itself
// when dial is empty): credentials, path and query are kept.
func withHosts(raw string, dial []string) string {
	if len(dial) == 0 {
		return raw
	}
	head, _, tail := splitAuthority(raw)
	return head + strings.Join(dial, ",") + tail
}

// scanOf returns the Target.Scan of b: every entry its Inspect lists
// under a name, as "role/mode/owner" (a queue entry's owner is its
// name), but a lease engine's dead waiter: a SQL waiter's intent row
// past its deadline, whose waiter is gone and which nothing reads any
// more (the engine's own orphan scan does not list it either).
func scanOf(b *backend, family scenario.Family) func(ctx context.Context, name string) ([]string, error) {
	return func(ctx context.Context, name string) ([]string, error) {
		in, err := b.client.Inspect(ctx, name)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, part := range inspectionParts(in) {
			for _, e := range part.entries {
				if part.role == "waiting" && e.Dead && family == scenario.Lease {
					continue
				}
				out = append(out, part.role+"/"+e.Mode+"/"+e.Owner)
			}
		}
		return out, nil
	}
}
