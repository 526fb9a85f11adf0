// Package exporter is `baton exporter`: Prometheus metrics and a live
// page of the named locks, read by one poller through every engine's
// Inspect.
package exporter

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine"
)

// Defaults of `baton exporter`.
const (
	// defaultListen is loopback: lock names and owners are not for every
	// host on the network unless the operator says so.
	defaultListen = "127.0.0.1:9187"
	// defaultInterval is how often the backend is read, whatever the
	// number of scrapes and open pages.
	defaultInterval = 2 * time.Second
	// defaultMaxStreams bounds the open /events streams: each holds a
	// connection (a file descriptor) for as long as its page is open, and
	// without a bound enough of them leave /metrics none to answer with.
	defaultMaxStreams = 64
	// maxMaxStreams bounds --max-streams, under a process's usual limit of
	// open files.
	maxMaxStreams = 4096
)

// Usage is the help of `baton exporter`.
const Usage = `Usage: baton exporter [flags] NAME|PREFIX...

Serve the directory layer of the named locks: Prometheus metrics at
/metrics and a live page at / (one card per lock: each holder with its
token, host, pid, program and labels, how long it has held, the waiters
in serving order, dead and duplicate entries flagged), updated by
server-sent events at /events, with a JSON snapshot at /api/locks (per
lock, what baton inspect --json prints). The backend is read every
--interval by one poller, not at every scrape.

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
With --holder-labels, also baton_lock_holder_info{lock,host,pid,program}
(1 per holding process): off by default, since every run's new pid makes
a new series.

What it exposes, to whoever reaches ADDR: the names of the locks watched
and of their entries, each holder's and waiter's owner, mode and notes,
the host name, pid, program name and labels its client recorded, the
fencing tokens (a write carrying the current one passes a fenced resource
as the holder's), how long each entry has been there,
every change as an event, the backend URL with its password hidden, and
the backend's errors. It changes no lock. How it is protected:
  - loopback by default: only this machine reaches 127.0.0.1:9187;
  - a Host check: a request whose Host header is not the address listened
    on (loopback: localhost and loopback addresses; every interface: IP
    addresses and this machine's name) nor an --allow-host name gets 421,
    so that a web page cannot read it through a browser by pointing a name
    of its own at this address (DNS rebinding);
  - --token-file: every request needs the token (except the login page
    and its script, style and icon, which hold no data). Prometheus sends
    it as a bearer token (authorization: credentials_file: FILE);
    curl -H "Authorization: Bearer $(cat FILE)"; a browser opens
    /login#token=TOKEN or types it on /login, which sets an HttpOnly
    SameSite=Strict session cookie (the fragment never reaches a server);
  - --tls-cert and --tls-key: HTTPS, so that the token and the data are
    not read on the way (the cookie is then Secure);
  - at most --max-streams open /events streams (503 and Retry-After
    beyond), at most 1024 open connections (more wait to be accepted),
    and timeouts: 10s to send a request's headers, 30s the whole
    request, 30s to take a response or an event, 60s for an idle
    connection.
Before listening beyond loopback, set a token and TLS.

Flags:
  --backend URL          as for baton run (default $BATON_BACKEND, else the
                         embedded default); shown with its password hidden
  --listen ADDR          HOST:PORT to serve on; HOST empty for every
                         interface. Default 127.0.0.1:9187 (loopback only).
  --allow-host NAME      also answer requests for NAME (a host name or IP
                         address, no port), e.g. the name Prometheus or a
                         reverse proxy uses; repeatable.
  --token-file FILE      require the token in FILE (one word, at least 16
                         characters: openssl rand -hex 32 > FILE) on every
                         request. FILE must not be readable by every user
                         (chmod 600), else exit 64.
  --tls-cert FILE        serve HTTPS with this certificate (PEM, chain
  --tls-key FILE         first) and its key; both or neither.
  --max-streams N        open /events streams at most. Default 64.
  --interval D           how often to read the backend. Default 2s.
  --holder-labels        export baton_lock_holder_info with each holder's
                         host, pid and program as labels (off: a series
                         per run; the page and /api/locks show them anyway)
  --connect-timeout D    reach the backend within D or exit 69; also bounds
                         each poll. Default 10s.

Exit codes: 0 stopped by SIGINT, SIGTERM or SIGHUP; 64 usage (a bad
--listen ADDR, token file or key pair included, found before anything
connects); 69 backend unreachable at start, or ADDR cannot be listened on;
77 authentication or TLS refused by the backend.
`

// exporterConfig is a parsed `baton exporter` command line.
type exporterConfig struct {
	backend.Config
	name       string // the first NAME, or PREFIX without "/*": the lock the connect is about
	help       bool   // -h/--help: print usage, exit 0
	listen     string
	interval   time.Duration
	names      []string // normalised; a PREFIX keeps its "/*"
	maxStreams int
	allowHosts []string // lower case, without a trailing dot
	tlsCert    string
	tlsKey     string
	tokenFile  string
	// holderLabels exports baton_lock_holder_info (--holder-labels).
	holderLabels bool
}

// parseExporter parses the exporter's arguments: flags before or after
// the NAMEs and PREFIXes.
func parseExporter(env *cli.Env, args []string) (*exporterConfig, error) {
	cfg := &exporterConfig{Config: backend.Config{TTL: backend.DefaultTTL, ConnectTimeout: backend.DefaultConnectTimeout, ReadOnly: true},
		listen: defaultListen, interval: defaultInterval, maxStreams: defaultMaxStreams}
	backendGiven := false
	fs := flag.NewFlagSet("exporter", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("backend", "", func(s string) error { cfg.Backend, backendGiven = s, true; return nil })
	fs.StringVar(&cfg.listen, "listen", defaultListen, "")
	fs.Var(cli.DurationValue{D: &cfg.interval}, "interval", "")
	fs.Var(cli.DurationValue{D: &cfg.ConnectTimeout}, "connect-timeout", "")
	fs.IntVar(&cfg.maxStreams, "max-streams", defaultMaxStreams, "")
	fs.Func("allow-host", "", func(s string) error {
		h, err := allowedHostName(s)
		cfg.allowHosts = append(cfg.allowHosts, h)
		return err
	})
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "")
	fs.StringVar(&cfg.tokenFile, "token-file", "", "")
	fs.BoolVar(&cfg.holderLabels, "holder-labels", false, "")
	positional, err := cli.ParseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		cfg.help = true
		return cfg, nil
	}
	if err != nil {
		return nil, cli.Usagef("exporter: %v", err)
	}
	if len(positional) == 0 {
		return nil, cli.Usagef("exporter: missing NAME (baton exporter [flags] NAME|PREFIX...)")
	}
	if err := checkExporterFlags(cfg); err != nil {
		return nil, err
	}
	if err := backend.CheckCommon("exporter", &cfg.Config); err != nil {
		return nil, err
	}
	if err := backend.Resolve("exporter", env, &cfg.Config, backendGiven); err != nil {
		return nil, err
	}
	for _, arg := range positional {
		n, err := exporterName(arg, cfg.URL)
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
func exporterName(arg string, u backend.URL) (string, error) {
	base, isPrefix := strings.CutSuffix(arg, prefixSuffix)
	n, err := engine.ValidateName(base)
	if err != nil {
		return "", err
	}
	if !isPrefix {
		return n, nil
	}
	if !backend.CanList(u) {
		return "", cli.Usagef("exporter: PREFIX %q: the %s engine cannot list its locks; name them one by one", arg, u.Scheme)
	}
	return n + prefixSuffix, nil
}

// Main is `baton exporter`.
func Main(env *cli.Env, args []string) int {
	cfg, err := parseExporter(env, args)
	if err != nil {
		return env.Fail(err)
	}
	if cfg.help {
		return env.ShowHelp(Usage)
	}
	if err := backend.Check(&cfg.Config); err != nil {
		return env.Fail(err)
	}
	sec, err := loadSecurity(cfg)
	if err != nil {
		return env.Fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), cli.Signals()...)
	defer stop()
	b, err := backend.Open(ctx, env, &cfg.Config, cfg.name)
	if err != nil {
		return env.FailConnected(ctx, err)
	}
	defer b.Close()
	p, up, errs := newPoller(env, cfg, b)
	if _, err := p.poll(ctx); err != nil {
		return env.FailConnected(ctx, backend.ScrubbedError{Msg: p.scrub(err.Error()), Err: err})
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		env.Note("exporter: listen: %v", err)
		return cli.ExitUnavailable
	}
	sec.hosts = newHostGuard(cfg.listen, ln.Addr(), cfg.allowHosts)
	ln = limitListener(ln, sec.maxConns)
	srv := newExporterServer(ctx, exporterHandler(p, up, errs, sec), sec)
	announce(env, cfg.URL.Redacted, b.Engine, ln.Addr(), sec)
	return serveExporter(ctx, env, stop, srv, serveFunc(srv, ln), p, cfg.interval)
}

// announce tells where the exporter serves, and warns when what it shows
// is open to more than this host.
func announce(env *cli.Env, backend, engine string, addr net.Addr, sec exporterSecurity) {
	scheme := "http"
	if sec.tls != nil {
		scheme = "https"
	}
	env.Note("exporter: %s on %s, serving %s://%s/ (metrics at /metrics)", backend, engine, scheme, addr)
	if a, ok := addr.(*net.TCPAddr); ok && !a.IP.IsLoopback() && sec.token == nil {
		env.Note("exporter: %s is not loopback and no --token-file is set: lock names, holders and tokens are visible to every host that reaches it", addr)
	}
}

// serveExporter polls and serves until a signal ends ctx, then stops the
// server and waits for the poller. stop ends ctx early (a server error).
func serveExporter(ctx context.Context, env *cli.Env, stop func(), srv *http.Server, serveFn func() error, p *poller, interval time.Duration) int {
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		p.run(ctx, interval, env.Note)
	}()
	err := serve(ctx, srv, serveFn)
	stop()
	<-polled
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		env.Note("exporter: %v", err)
		return cli.ExitSoftware
	}
	return cli.ExitOK
}

// newPoller builds the poller of cfg's locks on b, and the up gauge and
// the failed-poll counter it feeds.
func newPoller(env *cli.Env, cfg *exporterConfig, b *backend.Backend) (*poller, prometheus.GaugeFunc, prometheus.Counter) {
	errs := prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_exporter_scrape_errors_total",
		Help: "Polls of the backend that failed (a lock unreadable, or the backend unreachable)."})
	p := &poller{
		backend: cfg.URL.Redacted, engine: b.Engine, view: viewOf(b), queue: isQueue(b), list: b.Lister(), names: cfg.names,
		holderLabels: cfg.holderLabels,
		timeout:      cfg.ConnectTimeout, scrub: backend.Scrubber(cfg.URL, env.Getenv), now: time.Now, failed: errs.Inc,
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
