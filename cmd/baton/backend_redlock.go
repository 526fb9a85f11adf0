package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/redlock"
)

func init() {
	register(&engine{
		schemes: []string{"redlock"},
		parse: func(u engineURL) error {
			_, err := parseRedlock(u, &runConfig{ttl: defaultTTL, connectTimeout: defaultConnectTimeout})
			return err
		},
		open: openRedlock,
		checkHold: func(cmd string, _ engineURL, cfg *runConfig) error {
			if err := redlockOnlyMutex(cmd, cfg.mode); err != nil {
				return err
			}
			return checkRedisTTL(cmd, "Redlock", cfg.ttl)
		},
		noClean: func(engineURL) error { return redlockNoClean() },
	})
}

// redlockOnlyMutex is the usage error of a recipe Redlock does not have.
// It is checked offline (parseHold), before anything connects.
func redlockOnlyMutex(cmd string, mode lockMode) error {
	what := ""
	switch {
	case cmd == "elect":
		what = "elections"
	case mode == modeRead || mode == modeWrite:
		what = "read/write locks (--read, --write)"
	case mode == modeShared:
		what = "semaphores (--shared)"
	default:
		return nil
	}
	return usagef("%s: Redlock has only the mutex: no %s. The quorum fencing token proves the order of one holder "+
		"after another, not of several at once; use a redis:// primary, etcd, ZooKeeper or SQL for them", cmd, what)
}

// redlockNoClean is the usage error of `baton clean` on Redlock.
func redlockNoClean() error {
	return usagef("clean: not applicable to the Redlock engine: every lock key expires by itself on every node " +
		"(a dead holder's within --ttl); run baton inspect to see each node's holder, tokens and time left")
}

// redlockTarget is a parsed redlock:// URL: one go-redis options per node,
// in the URL's order (which must be the same in every client of a
// deployment: node i stores index i), and the key prefix.
type redlockTarget struct {
	nodes  []*redis.Options
	prefix string
}

// parseRedlock checks a redlock:// URL offline:
// redlock://[user:pass@]h1:p1,h2:p2,h3:p3[/db][?tls=true&prefix=…], at
// least three distinct nodes. Credentials missing from the URL come from
// BATON_REDIS_USERNAME / BATON_REDIS_PASSWORD (the same for every node);
// tls=true uses BATON_REDIS_CACERT and BATON_REDIS_CERT/_KEY as rediss://
// does.
func parseRedlock(u engineURL, cfg *runConfig) (*redlockTarget, error) {
	_, rest, _ := strings.Cut(u.raw, "://")
	rest, rawQuery, _ := strings.Cut(rest, "?")
	hosts, path, _ := strings.Cut(rest, "/")
	p, err := parseRedlockParams(u, path, rawQuery)
	if err != nil {
		return nil, err
	}
	t := &redlockTarget{prefix: p.prefix}
	seen := map[string]bool{}
	for _, h := range strings.Split(hosts, ",") {
		o, err := redlockNode(u, h, p, cfg)
		if err != nil {
			return nil, err
		}
		addr := strings.ToLower(o.Addr)
		if seen[addr] {
			// One server listed twice would cast two votes.
			return nil, badRedlockURL(u, "node %s listed twice: Redlock's nodes must be distinct servers", h)
		}
		seen[addr] = true
		t.nodes = append(t.nodes, o)
	}
	if len(t.nodes) < redlock.MinNodes {
		return nil, badRedlockURL(u, "%d node(s): Redlock needs at least %d independent servers (odd: 3, 5, 7)", len(t.nodes), redlock.MinNodes)
	}
	return t, nil
}

// badRedlockURL is the usage error of a redlock:// URL that does not parse.
func badRedlockURL(u engineURL, format string, args ...any) error {
	return usagef("backend %s: "+format, append([]any{u.redacted}, args...)...)
}

// redlockParams is what a redlock:// URL says of every node alike.
type redlockParams struct {
	db         int
	useTLS     bool
	prefix     string
	user, pass string
}

// parseRedlockParams reads the database number (path), tls= and prefix=
// (query), and the credentials: the URL's, else BATON_REDIS_USERNAME and
// BATON_REDIS_PASSWORD.
func parseRedlockParams(u engineURL, path, rawQuery string) (redlockParams, error) {
	var p redlockParams
	if path != "" {
		n, err := strconv.Atoi(path)
		if err != nil || n < 0 {
			return p, badRedlockURL(u, "database %q: want a number (the same on every node)", path)
		}
		p.db = n
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return p, badRedlockURL(u, "%v", err)
	}
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "tls":
			if p.useTLS, err = strconv.ParseBool(v); err != nil {
				return p, badRedlockURL(u, "tls=%q: want true or false", v)
			}
		case "prefix":
			if v == "" {
				return p, badRedlockURL(u, "empty prefix")
			}
			p.prefix = v
		default:
			return p, badRedlockURL(u, "unknown parameter %q (tls, prefix)", k)
		}
	}
	p.user, p.pass = os.Getenv("BATON_REDIS_USERNAME"), os.Getenv("BATON_REDIS_PASSWORD")
	if u.hasUser {
		p.user, p.pass = u.user, u.password // splitURL decoded them
	}
	return p, nil
}

// redlockNode returns the go-redis options of node h ("host:port").
func redlockNode(u engineURL, h string, p redlockParams, cfg *runConfig) (*redis.Options, error) {
	host, port, err := net.SplitHostPort(h)
	if err != nil || host == "" {
		return nil, badRedlockURL(u, "node %q: want host:port", h)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, badRedlockURL(u, "node %q: bad port", h)
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
		DialTimeout:           cfg.connectTimeout,
		ReadTimeout:           max(cfg.ttl/3, 100*time.Millisecond),
		ClientName:            "baton",
	}
	o.WriteTimeout = o.ReadTimeout
	if p.useTLS {
		o.TLSConfig = &tls.Config{ServerName: host}
		if err := redisTLS(o.TLSConfig, u.tlsName); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// redlockErr classifies a Redlock failure: ErrInvalidOption (exit 64)
// stays, authentication and TLS refusals on a node become baton.ErrAuth
// (77), everything else baton.ErrUnavailable (69).
func redlockErr(err error) error {
	if errors.Is(err, baton.ErrInvalidOption) || errors.Is(err, baton.ErrAuth) {
		return err
	}
	// The engine joins the nodes' errors under ErrUnavailable: look at the
	// text for a node that refused the credentials.
	if errors.Is(redisErr(errors.New(err.Error())), baton.ErrAuth) {
		return fmt.Errorf("%w: %w", baton.ErrAuth, err)
	}
	if errors.Is(err, baton.ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
}

// openRedlock connects to a Redlock deployment: the nodes' indexes are
// verified (and set on first use) by a majority, retried until
// --connect-timeout. inspect (read-only) writes nothing: it only reads.
func openRedlock(ctx context.Context, cfg *runConfig, u engineURL, _ string) (*backend, error) {
	if err := redlockOnlyMutex("run", cfg.mode); err != nil {
		return nil, err
	}
	t, err := parseRedlock(u, cfg)
	if err != nil {
		return nil, err
	}
	// Scrub the password whether it came from the URL or the environment.
	su := u
	if !u.hasUser {
		su.password = os.Getenv("BATON_REDIS_PASSWORD")
	}
	nodes := make([]redis.UniversalClient, len(t.nodes))
	for i, o := range t.nodes {
		nodes[i] = redis.NewClient(o)
	}
	closeNodes := func() {
		for _, n := range nodes {
			_ = n.Close()
		}
	}
	c, err := redlock.New(nodes, redlock.Options{TTL: cfg.ttl, Prefix: t.prefix, Observer: cfg.observer})
	if err != nil {
		closeNodes()
		return nil, err
	}
	closeAll := func() { _ = c.Close(); closeNodes() }
	if !cfg.readOnly {
		cctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
		defer cancel()
		if err := verifyRedlock(cctx, c); err != nil {
			closeAll()
			return nil, fmt.Errorf("connect %s: %w", u.redacted, su.scrub(err))
		}
	}
	read := func(ctx context.Context, name string) ([]redlock.NodeEntry, error) {
		es, err := c.Inspect(ctx, name)
		if err != nil {
			return nil, su.scrub(err)
		}
		for i := range es {
			es[i].Err = su.scrub(es[i].Err)
		}
		return es, nil
	}
	return &backend{
		engine: "redlock",
		locker: func(name string, mode lockMode, _ int) (baton.Locker, error) {
			if err := redlockOnlyMutex("run", mode); err != nil {
				return nil, err
			}
			return c.Mutex(name)
		},
		election: func(string) (baton.Elector, error) { return nil, redlockOnlyMutex("elect", modeMutex) },
		inspect:  func(a *adminSession, w io.Writer) int { return inspectRedlock(a, w, read) },
		view:     redlockView(read),
		close:    closeAll,
	}, nil
}

// verifyRedlock runs the client's index verification until it succeeds,
// a node refuses the credentials, the indexes mismatch, or ctx ends.
func verifyRedlock(ctx context.Context, c *redlock.Client) error {
	delay := 50 * time.Millisecond
	for {
		err := c.Verify(ctx)
		if err == nil {
			return nil
		}
		err = redlockErr(err)
		if errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrInvalidOption) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// redlockEntryJSON is one node in `inspect --json` on Redlock.
type redlockEntryJSON struct {
	Node    int    `json:"node"`
	Addr    string `json:"addr"`
	Entry   string `json:"entry"`   // node<i>/<owner>, "" when free
	Session string `json:"session"` // the holding grant's owner
	State   string `json:"state"`   // holder, free or unreachable
	Holder  bool   `json:"holder"`
	// Token is the grant's quorum token (BATON_TOKEN), written back on the
	// majority that granted first; null on a node that granted later.
	Token     *uint64 `json:"token"`
	NodeToken *uint64 `json:"node_token"` // the value this node minted for the grant
	// LeaseLeftMS is the key's time left on the node's clock.
	LeaseLeftMS *int64 `json:"lease_left_ms"`
	Counter     uint64 `json:"counter"` // the node's token counter
	Index       string `json:"index"`   // the node's stored index ("" when never set)
	Error       string `json:"error,omitempty"`
}

// inspectRedlock is inspect on the Redlock engine: one row per node with
// what it holds for NAME (owner, the node's own token and the grant's
// quorum token, time left on the node's clock) and the node's counter and
// index. It needs a majority of the nodes to answer.
func inspectRedlock(a *adminSession, w io.Writer, read func(context.Context, string) ([]redlock.NodeEntry, error)) int {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.connectTimeout)
	defer cancel()
	es, err := read(ctx, a.name)
	if err != nil {
		return failAdmin(a.ctx, redlockErr(err))
	}
	var errs []error
	holders := map[string]int{}
	out := make([]redlockEntryJSON, 0, len(es))
	for _, e := range es {
		j := redlockEntryJSON{Node: e.Node, Addr: e.Addr, State: "free", Counter: e.Counter, Index: e.Index}
		switch {
		case e.Err != nil:
			j.State, j.Error = "unreachable", e.Err.Error()
			errs = append(errs, e.Err)
		case e.Owner != "":
			j.State, j.Holder, j.Session, j.Entry = "holder", true, e.Owner, fmt.Sprintf("node%d/%s", e.Node, e.Owner)
			nt, left := e.Token, e.TTLLeft.Milliseconds()
			j.NodeToken, j.LeaseLeftMS = &nt, &left
			if e.Grant != 0 {
				g := e.Grant
				j.Token = &g
			}
			holders[e.Owner]++
		}
		out = append(out, j)
	}
	majority := len(es)/2 + 1
	if len(es)-len(errs) < majority {
		return failAdmin(a.ctx, redlockErr(fmt.Errorf("%w: %d of %d Redlock nodes answered, want ≥ %d: %w",
			baton.ErrUnavailable, len(es)-len(errs), len(es), majority, errors.Join(errs...))))
	}
	if a.cfg.json {
		err = writeJSON(w, out)
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tADDR\tSTATE\tOWNER\tTOKEN\tNODE TOKEN\tLEFT\tCOUNTER")
		for i, j := range out {
			left, nodeTok, tok := "-", "-", "-"
			if j.Holder {
				left = es[i].TTLLeft.Round(time.Millisecond).String()
				nodeTok, tok = tokenText(es[i].Token), tokenText(es[i].Grant)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", j.Node, j.Addr, j.State, termSafe(orDash(j.Session)), tok, nodeTok, left, j.Counter)
		}
		err = tw.Flush()
	}
	if err != nil {
		note("write: %v", err)
		return exitSoftware
	}
	for _, e := range errs {
		note("%v", e)
	}
	switch {
	case len(holders) == 0:
		note("%q is free on every node that answered", a.name)
	default:
		for _, owner := range slices.Sorted(maps.Keys(holders)) {
			n := holders[owner]
			if n >= majority {
				note("%q is held by %s on %d of %d nodes (a majority)", a.name, owner, n, len(es))
			} else {
				note("%s holds %q on %d of %d nodes, below the majority of %d: an attempt that failed or a lock expiring", owner, a.name, n, len(es), majority)
			}
		}
	}
	return exitOK
}
