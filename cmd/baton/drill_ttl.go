package main

import (
	"context"
	"time"
)

// serverTTL returns the TTL the servers of admin really give a client that
// asks for cfg.ttl: etcd rounds a lease up to whole seconds and silently
// raises one below its minimum (1.5 × its election timeout); ZooKeeper
// negotiates the session timeout into its [min, max]SessionTimeout. The
// other engines keep what they are given. A scenario times its faults and
// judges its grants by the TTL, so it must be the server's.
func serverTTL(ctx context.Context, cfg runConfig, admin *backend) (time.Duration, error) {
	if admin.serverTTL == nil {
		return cfg.ttl, nil
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	defer cancel()
	return admin.serverTTL(ctx)
}
