package redlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/internal/rediseval"
)

func init() { engine.Register(engine.Driver{Open: open, Check: check, Warn: warning}, "redlock") }

// envPrefix starts the environment variables a redlock:// URL takes what
// it does not say from, the same for every node and the same as
// redis:// takes them: BATON_REDIS_USERNAME and BATON_REDIS_PASSWORD when
// the URL has no credentials; with tls=true, BATON_REDIS_CACERT (else the
// system roots) and the client pair BATON_REDIS_CERT / BATON_REDIS_KEY.
const envPrefix = "BATON_REDIS"

// target is a redlock:// URL as the engine opens it: one go-redis options
// per node, in the URL's order (which must be the same in every client of
// a deployment: node i stores index i), and the client's Options.
type target struct {
	nodes []*redis.Options
	o     Options
}

// open serves baton.Open for
// redlock://[user:pass@]h1:p1,h2:p2,h3:p3[/db][?tls=true&prefix=…]: a
// client on go-redis clients of its own, which it closes with it, once a
// majority of the nodes answered a read of their indexes (see probe).
func open(ctx context.Context, cfg engine.Config) (engine.Conn, error) {
	t, err := parse(cfg)
	if err != nil {
		return nil, err
	}
	nodes := make([]redis.UniversalClient, len(t.nodes))
	for i, o := range t.nodes {
		nodes[i] = redis.NewClient(o)
	}
	closeNodes := func() error {
		var errs []error
		for _, n := range nodes {
			errs = append(errs, n.Close())
		}
		return errors.Join(errs...)
	}
	c, err := newClient(nodes, t.o)
	if err != nil {
		_ = closeNodes()
		return nil, err
	}
	if err := engine.Retry(ctx, func() error { return c.probe(ctx) }); err != nil {
		_ = c.close()
		_ = closeNodes()
		return nil, fmt.Errorf("redlock: connect %s: %w", cfg.URL.Redacted, err)
	}
	return batonConn{c: c, closeNodes: closeNodes}, nil
}

// check checks a redlock:// URL and the options offline.
func check(cfg engine.Config) error {
	t, err := parse(cfg)
	if err == nil {
		_, err = t.o.validate()
	}
	return err
}

// parse reads a redlock:// URL: at least three distinct nodes, the
// database number (path), tls= and prefix= (query); credentials from the
// URL, else from the environment.
func parse(cfg engine.Config) (*target, error) {
	u := cfg.URL
	rest, rawQuery, _ := strings.Cut(u.Rest(), "?")
	hosts, path, _ := strings.Cut(rest, "/")
	p, err := parseParams(cfg, path, rawQuery)
	if err != nil {
		return nil, err
	}
	t := &target{o: Options{TTL: cfg.TTL, Prefix: p.prefix, TokenFloor: cfg.TokenFloor, Observer: cfg.Observer, Process: cfg.Process}}
	seen := map[string]bool{}
	for _, h := range strings.Split(hosts, ",") {
		o, err := nodeOptions(cfg, h, p)
		if err != nil {
			return nil, err
		}
		addr := strings.ToLower(o.Addr)
		if seen[addr] {
			// One server listed twice would cast two votes.
			return nil, u.Badf("node %s listed twice: Redlock's nodes must be distinct servers", h)
		}
		seen[addr] = true
		t.nodes = append(t.nodes, o)
	}
	if len(t.nodes) < minNodes {
		return nil, u.Badf("%d node(s): Redlock needs at least %d independent servers (odd: 3, 5, 7)", len(t.nodes), minNodes)
	}
	return t, nil
}

// params is what a redlock:// URL says of every node alike.
type params struct {
	db         int
	useTLS     bool
	prefix     string
	user, pass string
}

// parseParams reads the database number (path), tls= and prefix=
// (query), and the credentials: the URL's, else BATON_REDIS_USERNAME and
// BATON_REDIS_PASSWORD.
func parseParams(cfg engine.Config, path, rawQuery string) (params, error) {
	u := cfg.URL
	var p params
	if path != "" {
		n, err := strconv.Atoi(path)
		if err != nil || n < 0 {
			return p, u.Badf("database %q: want a number (the same on every node)", path)
		}
		p.db = n
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return p, u.Badf("%v", err)
	}
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "tls":
			if p.useTLS, err = strconv.ParseBool(v); err != nil {
				return p, u.Badf("tls=%q: want true or false", v)
			}
		case "prefix":
			if v == "" {
				return p, u.Badf("empty prefix")
			}
			p.prefix = v
		default:
			return p, u.Badf("unknown parameter %q (tls, prefix)", k)
		}
	}
	p.user, p.pass = cfg.Getenv(envPrefix+"_USERNAME"), cfg.Getenv(envPrefix+"_PASSWORD")
	if u.HasUser {
		p.user, p.pass = u.User, u.Password
	}
	return p, nil
}

// nodeOptions returns the go-redis options of node h ("host:port").
func nodeOptions(cfg engine.Config, h string, p params) (*redis.Options, error) {
	host, port, err := net.SplitHostPort(h)
	if err != nil || host == "" {
		return nil, cfg.URL.Badf("node %q: want host:port", h)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, cfg.URL.Badf("node %q: bad port", h)
	}
	ttl := cfg.TTL
	if ttl == 0 {
		ttl = defaultTTL
	}
	o := &redis.Options{
		Addr:     net.JoinHostPort(host, port),
		Username: p.user,
		Password: p.pass,
		DB:       p.db,
		// baton retries acquires itself; a resent acquire script could
		// take the node a second time under a new owner.
		MaxRetries: -1,
		// These clients are baton's own: let every context deadline cut a
		// blocked read, so a dead node costs no more than the engine's
		// NodeTimeout, and Close does not wait for it.
		ContextTimeoutEnabled: true,
		DialTimeout:           cfg.ConnectTimeout,
		ReadTimeout:           max(ttl/3, 100*time.Millisecond),
		ClientName:            "baton",
	}
	o.WriteTimeout = o.ReadTimeout
	if p.useTLS {
		tc, err := cfg.TLSFromEnv(envPrefix)
		if err != nil {
			return nil, err
		}
		o.TLSConfig = &tls.Config{ServerName: host, MinVersion: tc.MinVersion, RootCAs: tc.RootCAs, Certificates: tc.Certificates}
		if tc.ServerName != "" {
			o.TLSConfig.ServerName = tc.ServerName
		}
	}
	return o, nil
}

// probe reads every node's stored index, writing nothing: a connect check
// that also serves a read-only client (baton inspect, the exporter). It
// succeeds when a majority of the nodes answered; a node storing another
// index than its position breaks the client as Verify does (an error
// wrapping baton.ErrInvalidOption and ErrNodeIndex). When every node that
// answered stores its index, Verify has nothing left to do and the first
// acquire skips it; a node with none gets it from its first acquire.
// Other errors wrap baton.ErrAuth when a node refused (credentials, ACL,
// TLS), else baton.ErrUnavailable.
func (c *Client) probe(ctx context.Context) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	// The requests end with ctx too: a silent node's request, abandoned,
	// would hold Close until its own deadline.
	timeout := c.o.NodeTimeout * 4
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	f := c.fanOut(ctx, nil, timeout, func(ctx context.Context, nd *node) (any, error) {
		v, err := nd.rdb.Get(ctx, c.keyIdx).Result()
		if errors.Is(err, redis.Nil) {
			return nil, nil // no index yet
		}
		return v, err
	})
	defer f.cancel()
	answered, indexed := 0, 0
	var errs []error
	for {
		r, more := f.next()
		if !more {
			break
		}
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		answered++
		if r.v == nil {
			continue
		}
		if err := c.checkIndex(r.i, r.v); err != nil {
			return err
		}
		indexed++
	}
	if f.pending() > 0 {
		errs = append(errs, fmt.Errorf("%d node(s) did not answer within %v", f.pending(), timeout.Round(time.Millisecond)))
	}
	if answered < c.maj {
		return rediseval.Classify(fmt.Errorf("%d of %d nodes answered, want ≥ %d: %w", answered, len(c.nodes), c.maj, errors.Join(errs...)))
	}
	if indexed == answered {
		c.verifyMu.Lock()
		c.verified = true
		c.verifyMu.Unlock()
	}
	return nil
}
