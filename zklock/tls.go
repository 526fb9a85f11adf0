package zklock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/baton-go/baton"
)

// dial is the go-zookeeper Dialer of a session: TCP, then TLS when
// Options.TLS is set, wrapped in the session's trackedConn either way (it
// parses the plain frames inside TLS).
//
// A TLS refusal — a server certificate that does not verify, a client
// certificate the server refuses, a server that does not speak TLS — ends
// the client with an error wrapping baton.ErrAuth: go-zookeeper would
// otherwise retry it forever, and the caller would wait out its deadline
// for an "unavailable" that no retry can fix. TLS 1.3 servers refuse a
// client certificate after the handshake, on the first read: the read
// side reports that too.
func (s *session) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	tc := s.c.opts.TLS
	if tc == nil {
		return s.tr.dialer(network, address, timeout)
	}
	raw, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	if tc.ServerName == "" {
		tc = tc.Clone()
		tc.ServerName, _, _ = net.SplitHostPort(address)
	}
	conn := tls.Client(raw, tc)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		if isTLSRefusal(err) {
			s.refused(address, err)
		}
		return nil, err
	}
	return s.tr.wrap(&tlsConn{Conn: conn, s: s, address: address}), nil
}

// tlsConn reports a TLS refusal seen on a read.
type tlsConn struct {
	*tls.Conn
	s       *session
	address string
}

func (c *tlsConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && isTLSRefusal(err) {
		c.s.refused(c.address, err)
	}
	return n, err
}

// refused ends the client and the session on a TLS refusal by address.
func (s *session) refused(address string, err error) {
	err = fmt.Errorf("zklock: TLS with %s: %w: %w", address, baton.ErrAuth, err)
	s.c.setFatal(err)
	s.lose(err)
}

// isTLSRefusal reports whether err is a certificate refused by either
// side, or a peer that does not speak TLS, rather than a network failure.
func isTLSRefusal(err error) bool {
	var ve *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	if errors.As(err, &ve) || errors.As(err, &rh) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "x509:") || strings.Contains(msg, "remote error: tls:")
}

// namedHosts is the HostProvider of TLS sessions: it hands the dialer the
// server addresses as given, so that the server's certificate is verified
// against the name the user wrote. (go-zookeeper's default provider
// resolves names to IP addresses first, after which only IP SANs could
// match.) Like the default, it shuffles the servers once and reports a
// full round without a connection as retryStart.
type namedHosts struct {
	mu         sync.Mutex
	servers    []string
	curr, last int
}

func (h *namedHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(servers) == 0 {
		return fmt.Errorf("zklock: no servers: %w", baton.ErrInvalidOption)
	}
	h.servers = append([]string(nil), servers...)
	rand.Shuffle(len(h.servers), func(i, j int) { h.servers[i], h.servers[j] = h.servers[j], h.servers[i] })
	h.curr, h.last = -1, -1
	return nil
}

func (h *namedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *namedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *namedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}
