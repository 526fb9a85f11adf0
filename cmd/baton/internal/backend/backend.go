package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

// Backend is a connected engine, as much of it as the commands need.
type Backend struct {
	// Engine is BATON_ENGINE: "zk", "etcd", "redis", "postgres", …
	Engine string
	// Client is the engine as baton.Open gave it: inspect and the
	// exporter read every engine through its Inspect, and clean finds
	// the queue engines' entries through baton.As.
	Client *baton.Client
	conn   engine.Conn // the engine's own recipes (Locker, Election)
	url    URL
	env    *cli.Env
	pw     power
	// granted, if set, is called once after the first grant, to report a
	// TTL the server changed.
	granted func()
	// serverTTL, if set, asks the server which TTL it gives a client that
	// asks for --ttl (etcd rounds and clamps leases, ZooKeeper negotiates
	// sessions); the other engines keep what they are given.
	serverTTL func(ctx context.Context) (time.Duration, error)
}

// Close ends the backend's sessions.
func (b *Backend) Close() { _ = b.Client.Close() }

// Granted reports, once the first grant came, a TTL the server changed.
func (b *Backend) Granted() {
	if b.granted != nil {
		b.granted()
	}
}

// ServerTTL returns the TTL the servers really give a client that asks
// for cfg.TTL: etcd rounds a lease up to whole seconds and silently
// raises one below its minimum (1.5 × its election timeout); ZooKeeper
// negotiates the session timeout into its [min, max]SessionTimeout. The
// other engines keep what they are given. A drill times its faults and
// judges its grants by the TTL, so it must be the server's.
func (b *Backend) ServerTTL(ctx context.Context, cfg *Config) (time.Duration, error) {
	if b.serverTTL == nil {
		return cfg.TTL, nil
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	return b.serverTTL(ctx)
}

// QueueAdmin is what `clean` needs of a queue engine (ZooKeeper, etcd):
// its raw entries, which an operator may remove. If it is also a
// queuekit.TokenBounder, clean and the exporter bound the tokens it
// cannot read exactly.
type QueueAdmin interface {
	queuekit.Inspector
	queuekit.Remover
}

// Queue returns b's queue of entries; ok is false on the engines whose
// locks are not queues.
func (b *Backend) Queue() (q QueueAdmin, ok bool) { return baton.As[QueueAdmin](b.Client) }

// Lister lists the locks directly under a prefix.
type Lister func(ctx context.Context, prefix string) ([]string, error)

// Lister returns how b lists the locks under a prefix, nil when its
// engine cannot (CanList tells offline).
func (b *Backend) Lister() Lister {
	l, ok := engine.Power[engine.Lister](b.Client)
	if !ok {
		return nil
	}
	return l.Names
}

// DrillClean returns what removes a drill's leftovers under a prefix
// once nothing holds or waits there, nil when the engine leaves none.
// No password shows in its errors.
func (b *Backend) DrillClean() func(ctx context.Context, prefix string) error {
	p, ok := engine.Power[engine.Purger](b.Client)
	if !ok {
		return nil
	}
	return func(ctx context.Context, prefix string) error {
		return scrubErr(b.url.Password, p.Purge(ctx, prefix))
	}
}

// Check checks cfg's backend without connecting, so that a bad URL is a
// usage error before anything else happens.
func Check(cfg *Config) error {
	if cfg.urlErr != nil {
		return cfg.urlErr
	}
	if err := Known(cfg.URL); err != nil {
		return err
	}
	return baton.CheckURL(cfg.URL.Orig, baton.WithTLSServerName(cfg.TLSServerName))
}

// Known returns a usage error naming the schemes there are when no
// engine linked in serves u's.
func Known(u URL) error {
	for _, s := range engine.Schemes() {
		if s == u.Scheme {
			return nil
		}
	}
	return cli.Usagef("backend %s: unknown scheme %q (%s)", u.Redacted, u.Scheme, knownSchemes())
}

// CheckHold checks a run or elect command line (cmd) against the
// backend's engine offline; an unknown or bad URL is left to Check.
func CheckHold(cmd string, cfg *Config, mode Mode) error {
	if pw := powers[cfg.URL.Scheme]; cfg.urlErr == nil && pw.checkHold != nil {
		return pw.checkHold(cmd, cfg, mode)
	}
	return nil
}

// CheckClean refuses `baton clean` on an engine that leaves nothing for
// it to remove.
func CheckClean(cfg *Config) error {
	if pw := powers[cfg.URL.Scheme]; cfg.urlErr == nil && pw.noClean != nil {
		return pw.noClean(cfg.URL)
	}
	return nil
}

// CanList reports, offline, whether the engine of u can list the locks
// under a prefix.
func CanList(u URL) bool { return engine.Lists(u.Scheme) }

// Open connects to cfg's backend within cfg.ConnectTimeout (bounded also
// by ctx); name is the lock the command is about. Errors are classified
// by cli.Classify: usage for bad URLs, baton.ErrAuth, else unavailable.
func Open(ctx context.Context, env *cli.Env, cfg *Config, name string) (*Backend, error) {
	if cfg.urlErr != nil {
		return nil, cfg.urlErr
	}
	if err := Known(cfg.URL); err != nil {
		return nil, err
	}
	d := &dial{ctx: ctx, env: env, cfg: cfg, u: cfg.URL, name: name, pw: powers[cfg.URL.Scheme]}
	d.u.TLSName = cfg.TLSServerName
	warnArgvPassword(env, cfg, d.u)
	warnTransport(env, d.u)
	opts, err := d.options()
	if err != nil {
		return nil, err
	}
	// One --connect-timeout for the connect and what completes it (the
	// SQL schema).
	cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	d.connect = cctx
	bc, err := baton.Open(cctx, d.u.Orig, opts...)
	if err != nil {
		return nil, d.openErr(err)
	}
	conn, ok := baton.As[engine.Conn](bc)
	if !ok {
		_ = bc.Close()
		return nil, fmt.Errorf("%s: the %s engine gave no engine.Conn", d.u.Redacted, bc.Engine())
	}
	b := &Backend{Engine: bc.Engine(), Client: bc, conn: conn, url: d.u, env: env, pw: d.pw}
	if err := d.complete(b); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}
