package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/zklock"
)

// zkPower: a connect error that names the URL (and zk+tls:// when a
// plain-text server answers TLS), and the session timeout the server
// negotiated.
var zkPower = power{openErr: zkOpenErr, opened: zkOpened}

func zkOpenErr(d *dial, err error) error {
	if errors.Is(err, baton.ErrInvalidOption) {
		return err
	}
	if d.ctx.Err() == nil && !errors.Is(err, baton.ErrAuth) {
		err = d.tlsHint(markUnavailable(err))
	}
	return fmt.Errorf("connect %s: %w", d.u.Redacted, err)
}

func zkOpened(d *dial, b *Backend) error {
	c, _ := baton.As[*zklock.Client](b.Client)
	if got := c.SessionTimeout(); got != d.cfg.TTL {
		d.env.Note("--ttl %v: the ZooKeeper server negotiated a session timeout of %v", d.cfg.TTL, got)
	}
	b.serverTTL = func(context.Context) (time.Duration, error) { return c.SessionTimeout(), nil }
	return nil
}
