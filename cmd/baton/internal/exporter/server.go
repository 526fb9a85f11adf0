package exporter

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// exporterTimeouts bound what one client can hold of the exporter.
type exporterTimeouts struct {
	// readHeader: a client has this long to send its request's headers
	// (a slowloris sends them a byte at a time).
	readHeader time.Duration
	// read: ... and its whole request.
	read time.Duration
	// idle: a kept-alive connection between requests.
	idle time.Duration
	// write: a response, and each event of a stream, must be taken
	// within it (a client that stops reading is let go).
	write time.Duration
}

// defaultExporterTimeouts are the exporter's: long enough for a scrape
// over a slow link, short enough that connections left idle or half sent
// are closed before they pile up.
var defaultExporterTimeouts = exporterTimeouts{
	readHeader: 10 * time.Second, read: 30 * time.Second, idle: 60 * time.Second, write: 30 * time.Second,
}

// exporterSecurity is how the exporter guards what it serves.
type exporterSecurity struct {
	hosts      hostGuard
	token      *tokenGuard // nil: no --token-file
	tls        *tls.Config // nil: plain HTTP
	maxStreams int
	maxConns   int // open connections at most; 0: no cap
	timeouts   exporterTimeouts
}

// maxExporterConns caps the exporter's open connections. Each holds a
// descriptor; past the cap, Accept waits for one to close (the timeouts
// above close idle and half-sent ones), so thousands of idle connections
// cannot exhaust the process's descriptors and stop /metrics from
// answering. Far above what scrapers and a few browser pages use.
const maxExporterConns = 1024

// loadSecurity reads the token and the TLS key pair of cfg (exit 64 when
// they are wrong, before anything connects); the hosts come with the
// listener.
func loadSecurity(cfg *exporterConfig) (exporterSecurity, error) {
	sec := exporterSecurity{maxStreams: cfg.maxStreams, maxConns: maxExporterConns, timeouts: defaultExporterTimeouts}
	if cfg.tokenFile != "" {
		tok, err := loadToken(cfg.tokenFile)
		if err != nil {
			return sec, err
		}
		sec.token = newTokenGuard(tok)
	}
	var err error
	sec.tls, err = loadTLS(cfg.tlsCert, cfg.tlsKey)
	return sec, err
}

// newExporterServer returns the server of h with sec's timeouts and TLS;
// every request's context derives from ctx.
func newExporterServer(ctx context.Context, h http.Handler, sec exporterSecurity) *http.Server {
	t := sec.timeouts
	return &http.Server{
		Handler:           h,
		TLSConfig:         sec.tls,
		ReadHeaderTimeout: t.readHeader,
		ReadTimeout:       t.read,
		IdleTimeout:       t.idle,
		WriteTimeout:      t.write,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
}

// serveFunc serves srv on ln, over TLS when srv has a TLS configuration.
func serveFunc(srv *http.Server, ln net.Listener) func() error {
	if srv.TLSConfig != nil {
		return func() error { return srv.ServeTLS(ln, "", "") }
	}
	return func() error { return srv.Serve(ln) }
}

// limitListener makes ln hold at most n connections open at once: Accept
// waits while n are open. n ≤ 0 returns ln as it is.
func limitListener(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		return ln
	}
	return &limited{Listener: ln, slots: make(chan struct{}, n)}
}

type limited struct {
	net.Listener
	slots chan struct{}
}

func (l *limited) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
}

// slotConn frees its slot once, at its first Close.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
