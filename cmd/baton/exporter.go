package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-go/baton"
)

// Defaults of `baton exporter`.
const (
	// defaultListen is loopback: lock names and owners are not for every
	// host on the network unless the operator says so.
	defaultListen = "127.0.0.1:9187"
	// defaultInterval is how often the backend is read, whatever the
	// number of scrapes and open pages.
	defaultInterval = 2 * time.Second
)

const exporterUsage = `Usage: baton exporter [flags] NAME|PREFIX...

Serve the directory layer of the named locks: Prometheus metrics at
/metrics and a live page at / (one row per lock: holder, token, held for,
waiters in serving order, dead and duplicate entries flagged), updated by
server-sent events at /events, with a JSON snapshot at /api/locks. The
backend is read every --interval by one poller, not at every scrape.

A PREFIX ends in "/*" ("jobs/*") and stands for every lock directly under
it, listed at every poll; only ZooKeeper can list its locks (other engines:
name them, else exit 64).

Metrics, one series per lock (label lock): baton_lock_entries,
baton_lock_holders, baton_lock_waiters, baton_lock_holder_token (where the
engine tells it: not on ZooKeeper, whose page shows a bound),
baton_lock_oldest_entry_age_seconds and baton_lock_holder_age_seconds
(ZooKeeper: the others keep no creation time), baton_lock_duplicates and
baton_lock_dead_entries (ZooKeeper and etcd); and baton_exporter_up (1 when
the last poll worked), baton_exporter_scrape_errors_total (failed polls).

Flags:
  --backend URL          as for baton run (default $BATON_BACKEND, else the
                         embedded default); shown with its password hidden
  --listen ADDR          address to serve on. Default 127.0.0.1:9187
                         (loopback only).
  --interval D           how often to read the backend. Default 2s.
  --connect-timeout D    reach the backend within D or exit 69; also bounds
                         each poll. Default 10s.

Exit codes: 0 stopped by SIGINT, SIGTERM or SIGHUP; 64 usage; 69 backend
unreachable at start, or ADDR cannot be listened on; 77 authentication or
TLS refused.
`

// exporterConfig is a parsed `baton exporter` command line.
type exporterConfig struct {
	runConfig
	listen   string
	interval time.Duration
	names    []string // normalised; a PREFIX keeps its "/*"
}

// parseExporter parses the exporter's arguments: flags before or after
// the NAMEs and PREFIXes.
func parseExporter(args []string, getenv func(string) string) (*exporterConfig, error) {
	cfg := &exporterConfig{runConfig: runConfig{ttl: defaultTTL, connectTimeout: defaultConnectTimeout, readOnly: true},
		listen: defaultListen, interval: defaultInterval}
	backendGiven := false
	fs := flag.NewFlagSet("exporter", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("backend", "", func(s string) error { cfg.backend, backendGiven = s, true; return nil })
	fs.StringVar(&cfg.listen, "listen", defaultListen, "")
	fs.Var(durationValue{d: &cfg.interval}, "interval", "")
	fs.Var(durationValue{d: &cfg.connectTimeout}, "connect-timeout", "")
	positional, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		cfg.help = true
		return cfg, nil
	}
	if err != nil {
		return nil, usagef("exporter: %v", err)
	}
	if len(positional) == 0 {
		return nil, usagef("exporter: missing NAME (baton exporter [flags] NAME|PREFIX...)")
	}
	if cfg.interval <= 0 {
		return nil, usagef("exporter: --interval must be positive, got %v", cfg.interval)
	}
	if err := checkCommon("exporter", &cfg.runConfig); err != nil {
		return nil, err
	}
	if err := resolveBackend("exporter", &cfg.runConfig, backendGiven, getenv); err != nil {
		return nil, err
	}
	for _, arg := range positional {
		n, err := exporterName(arg, cfg.backend)
		if err != nil {
			return nil, err
		}
		cfg.names = append(cfg.names, n)
	}
	cfg.name = strings.TrimSuffix(cfg.names[0], prefixSuffix)
	return cfg, nil
}

// exporterName validates one NAME or PREFIX; a PREFIX needs an engine
// that can list.
func exporterName(arg, backend string) (string, error) {
	base, isPrefix := strings.CutSuffix(arg, prefixSuffix)
	n, err := baton.ValidateName(base)
	if err != nil {
		return "", err
	}
	if !isPrefix {
		return n, nil
	}
	if !canList(backend) {
		u, _ := splitURL(backend)
		return "", usagef("exporter: PREFIX %q: the %s engine cannot list its locks; name them one by one", arg, u.scheme)
	}
	return n + prefixSuffix, nil
}

// exporterMain is `baton exporter`.
func exporterMain(args []string) int {
	cfg, err := parseExporter(args, os.Getenv)
	if err != nil {
		return fail(err)
	}
	if cfg.help {
		fmt.Fprint(os.Stderr, exporterUsage)
		return exitOK
	}
	if err := parseBackend(cfg.backend); err != nil {
		return fail(err)
	}
	u, _ := splitURL(cfg.backend)
	ctx, stop := signal.NotifyContext(context.Background(), forwarded...)
	defer stop()
	b, err := openBackend(ctx, &cfg.runConfig, cfg.name)
	if err != nil {
		return failAdmin(ctx, err)
	}
	defer b.close()
	p, up, errs := newPoller(cfg, u, b)
	if _, err := p.poll(ctx); err != nil {
		return failAdmin(ctx, scrubbedError{msg: p.scrub(err.Error()), err: err})
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		note("exporter: listen: %v", err)
		return exitUnavailable
	}
	srv := &http.Server{
		Handler:           exporterHandler(p, up, errs),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	note("exporter: %s on %s, serving http://%s/ (metrics at /metrics)", u.redacted, b.engine, ln.Addr())
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		note("exporter: %s is not loopback: lock names and owners are visible to every host that reaches it", ln.Addr())
	}
	return serveExporter(ctx, stop, srv, ln, p, cfg.interval)
}

// serveExporter polls and serves until a signal ends ctx, then stops the
// server and waits for the poller. stop ends ctx early (a server error).
func serveExporter(ctx context.Context, stop func(), srv *http.Server, ln net.Listener, p *poller, interval time.Duration) int {
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		p.run(ctx, interval, note)
	}()
	err := serve(ctx, srv, func() error { return srv.Serve(ln) })
	stop()
	<-polled
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		note("exporter: %v", err)
		return exitSoftware
	}
	return exitOK
}

// newPoller builds the poller of cfg's locks on b, and the up gauge and
// the failed-poll counter it feeds.
func newPoller(cfg *exporterConfig, u engineURL, b *backend) (*poller, prometheus.GaugeFunc, prometheus.Counter) {
	errs := prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_exporter_scrape_errors_total",
		Help: "Polls of the backend that failed (a lock unreadable, or the backend unreachable)."})
	p := &poller{
		backend: u.redacted, engine: b.engine, view: viewOf(b), list: listerOf(b), names: cfg.names,
		timeout: cfg.connectTimeout, scrub: secretScrubber(u, os.Getenv), now: time.Now, failed: errs.Inc,
	}
	up := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "baton_exporter_up",
		Help: "1 when the last poll of the backend read every lock, else 0."}, func() float64 {
		if s, _ := p.snapshot(); s.Up {
			return 1
		}
		return 0
	})
	return p, up, errs
}

// secretScrubber returns a function that replaces the URL's password and
// the secret variables' values, in every form a driver may quote them in,
// by "***", and redacts secret query parameters.
func secretScrubber(u engineURL, getenv func(string) string) func(string) string {
	r := secretReplacer(u.password, getenv)
	return func(msg string) string {
		if r != nil {
			msg = r.Replace(msg)
		}
		return redactQuery(msg)
	}
}

// scrubbedError shows a message without secrets but keeps the error's
// chain, for the exit code.
type scrubbedError struct {
	msg string
	err error
}

func (e scrubbedError) Error() string { return e.msg }
func (e scrubbedError) Unwrap() error { return e.err }
