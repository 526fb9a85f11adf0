package backend

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/baton-go/baton"
)

// probeTimeout bounds the probe of one endpoint.
const probeTimeout = 2 * time.Second

// plainToTLS explains a plain-text connection that failed: if a server
// answers a TLS handshake, it refused our plain text, and the cure is the
// TLS scheme, not a retry. It returns an error wrapping baton.ErrAuth
// naming the address and tlsScheme, or nil when no server speaks TLS.
// ctx is not the connect timeout's (that one has ended): each probe has
// probeTimeout of its own.
func plainToTLS(ctx context.Context, addrs []string, tlsScheme string) error {
	for _, a := range addrs {
		if speaksTLS(ctx, a) {
			return fmt.Errorf("%w: %s speaks TLS and refuses plain text: use %s://", baton.ErrAuth, a, tlsScheme)
		}
	}
	return nil
}

// speaksTLS reports whether addr completes, or refuses with a TLS alert,
// a handshake. The server's certificate is not verified: nothing is sent
// over the connection, it only tells the protocol.
func speaksTLS(ctx context.Context, addr string) bool {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(pctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer raw.Close()
	err = tls.Client(raw, &tls.Config{InsecureSkipVerify: true}).HandshakeContext(pctx) //nolint:gosec // protocol probe only
	return err == nil || strings.Contains(err.Error(), "remote error: tls:")
}
