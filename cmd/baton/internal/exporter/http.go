package exporter

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// webFiles is the live page: self-contained, no CDN, so it works on a host
// without internet access and loads nothing a third party could change.
//
//go:embed web
var webFiles embed.FS

// exporterHandler serves /metrics, /api/locks, /events and the page,
// behind the Host check and, with a token, the token check. The
// registry is the exporter's own: the lock series, up, the error counter,
// and the Go and process collectors.
func exporterHandler(p *poller, up prometheus.GaugeFunc, errs prometheus.Counter, sec exporterSecurity) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(lockCollector{p}, up, errs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /api/locks", func(w http.ResponseWriter, _ *http.Request) {
		_, b := p.snapshot()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /events", streamLimit(sec.maxStreams, func(w http.ResponseWriter, r *http.Request) {
		serveEvents(w, r, p, sec.timeouts.write)
	}))
	static, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic("baton: embedded page: " + err.Error()) // the embed directive guarantees it
	}
	mux.Handle("GET /", http.FileServerFS(static))
	var h http.Handler = mux
	if sec.token != nil {
		mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) { http.ServeFileFS(w, r, static, "login.html") })
		mux.HandleFunc("POST /login", sec.token.login)
		h = sec.token.wrap(mux)
	}
	return securityHeaders(sec.hosts.wrap(h))
}

// securityHeaders forbids the page any script, style or connection but
// its own: owners and kinds are written by other clients, and the CSP is
// the second fence after the page's textContent.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; "+
			"connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// eventsKeepAlive is how often an idle event stream gets a comment, so
// that proxies do not close it.
const eventsKeepAlive = 15 * time.Second

// serveEvents streams every snapshot as a server-sent event, the last one
// first, until the client leaves or the server stops (the request's
// context derives from the exporter's). The server's write timeout
// would cut the stream once it ran from the request on: each write gets
// its own deadline instead, writeTimeout from its start, so that a client
// that stops reading is still let go.
func serveEvents(w http.ResponseWriter, r *http.Request, p *poller, writeTimeout time.Duration) {
	rc := http.NewResponseController(w)
	ch, cancel := p.subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	send := func(format string, b []byte) bool { return sendEvent(w, rc, writeTimeout, format, b) }
	_, b := p.snapshot()
	if !send("data: %s\n\n", b) {
		return
	}
	t := time.NewTicker(eventsKeepAlive)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case b := <-ch:
			if !send("data: %s\n\n", b) {
				return
			}
		case <-t.C:
			if !send(": keep-alive%s\n\n", nil) {
				return
			}
		}
	}
}

// sendEvent writes and flushes one event within timeout.
func sendEvent(w http.ResponseWriter, rc *http.ResponseController, timeout time.Duration, format string, b []byte) bool {
	_ = rc.SetWriteDeadline(time.Now().Add(timeout)) // unsupported: the connection has no deadline to extend
	if _, err := fmt.Fprintf(w, format, b); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// serve runs srv on the listener until ctx ends, then shuts it down; the
// event streams end with ctx, which is every request's base.
func serve(ctx context.Context, srv *http.Server, serveFn func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- serveFn() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc // http.ErrServerClosed
	return err
}
