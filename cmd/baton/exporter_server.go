package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
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
	timeouts   exporterTimeouts
}

// loadSecurity reads the token and the TLS key pair of cfg (exit 64 when
// they are wrong, before anything connects); the hosts come with the
// listener.
func loadSecurity(cfg *exporterConfig) (exporterSecurity, error) {
	sec := exporterSecurity{maxStreams: cfg.maxStreams, timeouts: defaultExporterTimeouts}
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
