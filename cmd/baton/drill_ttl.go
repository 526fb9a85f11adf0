package main

import (
	"context"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/zklock"
)

// serverTTL returns the TTL the servers of u really give a client that
// asks for cfg.ttl: etcd rounds a lease up to whole seconds and silently
// raises one below its minimum (1.5 × its election timeout); ZooKeeper
// negotiates the session timeout into its [min, max]SessionTimeout. The
// other engines keep what they are given. A scenario times its faults and
// judges its grants by the TTL, so it must be the server's.
func serverTTL(ctx context.Context, cfg runConfig, u engineURL) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	defer cancel()
	switch u.scheme {
	case "etcd", "etcds":
		return etcdGrantedTTL(ctx, cfg, u)
	case "zk":
		return zkNegotiatedTTL(ctx, cfg, u)
	}
	return cfg.ttl, nil
}

// etcdGrantedTTL grants a lease of cfg.ttl (rounded up to seconds, as the
// engine does), reads the TTL granted and revokes it at once.
func etcdGrantedTTL(ctx context.Context, cfg runConfig, u engineURL) (time.Duration, error) {
	endpoints, useTLS, err := etcdlock.ParseURL(u.raw)
	if err != nil {
		return 0, usagef("backend %s: %v", u.redacted, err)
	}
	ccfg := clientv3.Config{Endpoints: endpoints, DialTimeout: cfg.connectTimeout, Username: u.user,
		Password: u.password, Logger: zap.NewNop()}
	if !u.hasUser {
		ccfg.Username, ccfg.Password = os.Getenv("BATON_ETCD_USER"), os.Getenv("BATON_ETCD_PASSWORD")
	}
	if useTLS {
		if ccfg.TLS, err = etcdTLS(); err != nil {
			return 0, err
		}
	}
	cli, err := clientv3.New(ccfg)
	if err != nil {
		return 0, fmt.Errorf("connect %s: %w", u.redacted, etcdErr(err))
	}
	defer cli.Close()
	secs := int64((cfg.ttl + time.Second - 1) / time.Second)
	g, err := cli.Grant(ctx, secs)
	if err != nil {
		return 0, fmt.Errorf("probe the lease TTL on %s: %w", u.redacted, etcdErr(err))
	}
	_, _ = cli.Revoke(ctx, g.ID) // else it expires by itself within the TTL
	return time.Duration(g.TTL) * time.Second, nil
}

// zkNegotiatedTTL opens a session asking for cfg.ttl and reads the
// timeout the server negotiated.
func zkNegotiatedTTL(ctx context.Context, cfg runConfig, u engineURL) (time.Duration, error) {
	servers, chroot, err := zklock.ParseURL(u.raw)
	if err != nil {
		return 0, usagef("backend %s: %v", u.redacted, err)
	}
	opts := zklock.Options{SessionTimeout: cfg.ttl, Chroot: chroot}
	user, pass := u.user, u.password
	if !u.hasUser {
		user, pass = os.Getenv("BATON_ZK_USER"), os.Getenv("BATON_ZK_PASSWORD")
	}
	if user != "" {
		opts.Auth = []zklock.Digest{{User: user, Password: pass}}
	}
	c, err := zklock.Dial(ctx, servers, opts)
	if err != nil {
		return 0, fmt.Errorf("connect %s: %w", u.redacted, err)
	}
	defer c.Close()
	return c.SessionTimeout(), nil
}
