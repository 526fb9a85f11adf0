package etcdlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/baton-go/baton"
)

// h2Hello is an HTTP/2 client connection preface and an empty SETTINGS
// frame: a gRPC server answers it at once with its own SETTINGS.
const h2Hello = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// probeTimeout bounds the TLS probe of one endpoint.
const probeTimeout = 2 * time.Second

// probeTLS tells a TLS refusal from an unreachable server before the etcd
// client connects: gRPC retries a failed handshake until the deadline and
// reports only "context deadline exceeded", which would read as an
// unavailable server for a certificate problem. It completes one TLS
// handshake with an endpoint and reads the server's first frame, where a
// server that refuses the client certificate says so (TLS 1.3 sends that
// refusal after the handshake). It returns an error wrapping
// baton.ErrAuth for a refused certificate either way, and nil otherwise,
// leaving unreachable endpoints to the client.
func probeTLS(ctx context.Context, endpoints []string, tc *tls.Config) error {
	var lastAuth error
	for _, ep := range endpoints {
		err := probeTLSOnce(ctx, ep, tc)
		switch {
		case err == nil:
			return nil
		case isTLSRefusal(err):
			lastAuth = fmt.Errorf("%w: TLS with %s: %w", baton.ErrAuth, ep, err)
		}
	}
	return lastAuth
}

// probeTLSOnce handshakes with ep and reads the server's first bytes.
func probeTLSOnce(ctx context.Context, ep string, tc *tls.Config) error {
	host, _, err := net.SplitHostPort(ep)
	if err != nil {
		return err
	}
	c := tc.Clone()
	if c.ServerName == "" {
		c.ServerName = host
	}
	c.NextProtos = []string{"h2"}
	// A healthy server answers within milliseconds; a silent one must not
	// eat the connect timeout the client needs for the other endpoints.
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(pctx, "tcp", ep)
	if err != nil {
		return err
	}
	conn := tls.Client(raw, c)
	defer conn.Close()
	if dl, ok := pctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if err := conn.HandshakeContext(pctx); err != nil {
		return err
	}
	if _, err := conn.Write([]byte(h2Hello)); err != nil {
		return err
	}
	_, err = conn.Read(make([]byte, 1))
	return err
}

// isTLSRefusal reports whether err is a certificate the client or the
// server refused (not a network failure).
func isTLSRefusal(err error) bool {
	var ae tls.AlertError
	var ve *tls.CertificateVerificationError
	if errors.As(err, &ae) || errors.As(err, &ve) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "x509:") || strings.Contains(msg, "remote error: tls:") ||
		strings.Contains(msg, "first record does not look like a TLS handshake")
}
