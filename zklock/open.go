package zklock

import (
	"context"

	"github.com/baton-go/baton/engine"
)

func init() {
	engine.Register(engine.Driver{Open: open, Check: check, Warn: warning, Lists: true}, "zk", "zk+tls")
}

// target is what a zk:// or zk+tls:// URL names.
type target struct {
	servers []string
	chroot  string
	tls     bool
}

// parseTarget reads zk://[user[:password]@]h1:2181,h2/chroot offline, and
// zk+tls:// alike for the servers' secureClientPort. The hosts and the
// chroot are ParseURL's; the digest user may be in the URL, since
// engine.URL takes it out before anything prints the URL.
func parseTarget(u engine.URL) (target, error) {
	if u.HasUser && u.User == "" {
		return target{}, u.Badf("empty ZooKeeper user")
	}
	servers, chroot, err := ParseURL("zk://" + u.Rest())
	if err != nil {
		return target{}, u.Badf("%v", err)
	}
	return target{servers: servers, chroot: chroot, tls: u.Scheme == "zk+tls"}, nil
}

// check serves baton.CheckURL.
func check(cfg engine.Config) error {
	_, err := parseTarget(cfg.URL)
	return err
}

// open serves baton.Open for zk:// and zk+tls:// URLs. zk+tls:// verifies
// the servers with BATON_ZK_CACERT (else the system roots) and presents
// the client pair BATON_ZK_CERT / BATON_ZK_KEY when set. The digest user
// comes from the URL, else from BATON_ZK_USER / BATON_ZK_PASSWORD; baton's
// nodes then carry an ACL naming that user alone. cfg.TTL is the session
// timeout asked for (0: DefaultSessionTimeout).
func open(ctx context.Context, cfg engine.Config) (engine.Conn, error) {
	t, err := parseTarget(cfg.URL)
	if err != nil {
		return nil, err
	}
	opts := Options{
		SessionTimeout: cfg.TTL, Chroot: t.chroot, TokenFloor: cfg.TokenFloor,
		Observer: cfg.Observer, Process: cfg.Process,
	}
	if t.tls {
		if opts.TLS, err = cfg.TLSFromEnv("BATON_ZK"); err != nil {
			return nil, err
		}
	}
	user, pass := cfg.URL.User, cfg.URL.Password
	if !cfg.URL.HasUser {
		user, pass = cfg.Getenv("BATON_ZK_USER"), cfg.Getenv("BATON_ZK_PASSWORD")
	}
	if user != "" {
		opts.Auth = []Digest{{User: user, Password: pass}}
	}
	c, err := dial(ctx, t.servers, opts)
	if err != nil {
		return nil, err
	}
	return connOf(c), nil
}
