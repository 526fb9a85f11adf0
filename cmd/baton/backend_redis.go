package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/leasing"
	"github.com/baton-go/baton/redislock"
)

// quietRedis drops go-redis' own log lines: it prints connection-pool
// events (a connection retired after a TLS refusal, …) to stderr by
// itself, which would break --log-format json's one JSON object a line;
// baton reports every failure that matters through its own errors.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func init() {
	redis.SetLogger(quietRedis{})
	register(&engine{
		schemes: []string{"redis", "rediss"},
		parse: func(u engineURL) error {
			_, err := parseRedis(u, &runConfig{ttl: defaultTTL, connectTimeout: defaultConnectTimeout})
			return err
		},
		open:      openRedis,
		checkHold: func(cmd string, _ engineURL, cfg *runConfig) error { return checkRedisTTL(cmd, "Redis", cfg.ttl) },
		noClean: func(engineURL) error {
			return usagef("clean: not applicable to the Redis engine: every key and waiting intent it writes expires by itself " +
				"(a dead holder's within --ttl); run baton inspect to see holders, tokens, time left and waiters")
		},
	})
}

// parseRedis checks a redis:// or rediss:// URL offline and returns the
// go-redis options: redis://[user:pass@]host:port[/db][?db=N].
// Credentials missing from the URL come from BATON_REDIS_USERNAME /
// BATON_REDIS_PASSWORD; rediss:// uses TLS with BATON_REDIS_CACERT (else
// the system roots) and the optional client pair BATON_REDIS_CERT/_KEY.
func parseRedis(u engineURL, cfg *runConfig) (*redis.Options, error) {
	if err := redisParams(u); err != nil {
		return nil, err
	}
	o, err := redis.ParseURL(u.orig)
	if err != nil {
		return nil, usagef("backend %s: %v", u.redacted, u.scrub(err))
	}
	if !u.hasUser {
		o.Username, o.Password = os.Getenv("BATON_REDIS_USERNAME"), os.Getenv("BATON_REDIS_PASSWORD")
	}
	if o.TLSConfig != nil {
		if err := redisTLS(o.TLSConfig, u.tlsName); err != nil {
			return nil, err
		}
	}
	o.DialTimeout = cfg.connectTimeout
	// baton retries acquires itself and bounds every call by its own
	// deadlines; a resent script could take a second permit.
	o.MaxRetries = -1
	o.ContextTimeoutEnabled = true // deadlines cut blocked reads: no goroutine per call
	o.ReadTimeout = max(cfg.ttl/3, 100*time.Millisecond)
	o.WriteTimeout = o.ReadTimeout
	o.ClientName = "baton"
	return o, nil
}

// checkRedisTTL refuses a --ttl the Redis and Redlock engines cannot
// honour (engine names it), offline: their lease times are whole
// milliseconds (PEXPIRE, PX), and below leasing.MinTTL the renewal and
// drift margins stop making sense. Truncating instead would turn a TTL
// under 1ms into 0, which the engines read as "unset": their 15s default.
func checkRedisTTL(cmd, engine string, ttl time.Duration) error {
	switch {
	case ttl < leasing.MinTTL:
		return usagef("%s: --ttl %v: the %s engine needs a TTL of at least %v", cmd, ttl, engine, leasing.MinTTL)
	case ttl%time.Millisecond != 0:
		return usagef("%s: --ttl %v: the %s engine keeps TTLs in whole milliseconds", cmd, ttl, engine)
	}
	return nil
}

// redisParams refuses every URL parameter but db=, as parseRedlockParams
// and mysqlParams refuse theirs: go-redis reads many more, and baton sets
// the timeouts, retries and client name itself (a parameter would be
// silently overridden), while skip_verify=true would turn certificate
// verification off and hand the password to whoever answers, quietly.
// Trust a private CA with BATON_REDIS_CACERT instead.
func redisParams(u engineURL) error {
	_, query, _ := strings.Cut(u.raw, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return usagef("backend %s: %v", u.redacted, err)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch k {
		case "db":
		case "skip_verify":
			return usagef("backend %s: skip_verify turns off the verification of the server's certificate: refused "+
				"(give its CA in BATON_REDIS_CACERT)", u.redacted)
		default:
			return usagef("backend %s: unknown parameter %q: only db= is understood "+
				"(baton sets timeouts, retries and the client name itself)", u.redacted, k)
		}
	}
	return nil
}

// redisTLS completes go-redis' TLS config from the environment:
// BATON_REDIS_CACERT and the client pair BATON_REDIS_CERT/_KEY; serverName
// as tlsFromEnv's.
func redisTLS(tc *tls.Config, serverName string) error {
	env, err := tlsFromEnv("BATON_REDIS", serverName)
	if err != nil {
		return err
	}
	tc.MinVersion, tc.RootCAs, tc.Certificates = env.MinVersion, env.RootCAs, env.Certificates
	if env.ServerName != "" {
		tc.ServerName = env.ServerName
	}
	return nil
}

// redisErr marks authentication, ACL and TLS failures with baton.ErrAuth
// (exit 77) and everything else with baton.ErrUnavailable (exit 69).
func redisErr(err error) error {
	if errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrUnavailable) {
		return err
	}
	if redisRefused(err.Error()) {
		return fmt.Errorf("%w: %w", baton.ErrAuth, err)
	}
	return fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
}

// redisRefused reports whether a Redis error's text is a refusal: bad or
// missing credentials, an ACL that denies a key, channel or command, or
// TLS (the server's certificate, or ours refused by the server).
func redisRefused(msg string) bool {
	for _, p := range []string{"NOAUTH", "WRONGPASS", "NOPERM", "ERR AUTH", "ERR invalid password", "ERR Client sent AUTH",
		"x509:", "tls: ", "first record does not look like a TLS handshake"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// markRedisRefusal marks an acquire's Redis refusal with baton.ErrAuth: a
// user whose ACL lacks the lock's keys connects fine and is refused only
// by the acquire script.
func markRedisRefusal(err error) error { return markRefusal(err, redisRefused) }

// openRedis connects to a Redis primary: the connection (and AUTH) is
// proved by a PING, retried until --connect-timeout.
func openRedis(ctx context.Context, cfg *runConfig, u engineURL, _ string) (*backend, error) {
	o, err := parseRedis(u, cfg)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(o)
	c, err := redislock.New(rdb, redislock.Options{TTL: cfg.ttl, Observer: cfg.observer})
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	closeAll := func() { _ = c.Close(); _ = rdb.Close() }
	cctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	defer cancel()
	if err := pingRedis(cctx, rdb); err != nil {
		closeAll()
		if o.TLSConfig == nil && !errors.Is(err, baton.ErrAuth) {
			if tlsErr := plainToTLS(ctx, []string{o.Addr}, "rediss"); tlsErr != nil {
				err = fmt.Errorf("%w (%w)", tlsErr, err)
			}
		}
		return nil, fmt.Errorf("connect %s: %w", u.redacted, u.scrub(err))
	}
	return refusing(&backend{
		engine: "redis",
		locker: func(name string, mode lockMode, permits int) (baton.Locker, error) {
			return pickLocker(name, mode, permits, c.Mutex, c.RWMutex, c.Semaphore)
		},
		election: func(name string) (baton.Elector, error) { return c.Election(name) },
		inspect:  func(a *adminSession, w io.Writer) int { return inspectRedis(a, w, c.Inspect) },
		view:     redisView(c.Inspect),
		close:    closeAll,
	}, markRedisRefusal), nil
}

// pingRedis pings until it works, the server refuses the credentials, or
// ctx ends. The PING runs in its own goroutine bounded by ctx: go-redis
// does not cut a blocked read at a context deadline.
func pingRedis(ctx context.Context, rdb *redis.Client) error {
	delay := 50 * time.Millisecond
	for {
		done := make(chan error, 1)
		go func() { done <- rdb.Ping(ctx).Err() }() // ends at the client's read timeout at worst
		var err error
		select {
		case err = <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err == nil {
			return nil
		}
		err = redisErr(err)
		if errors.Is(err, baton.ErrAuth) || ctx.Err() != nil {
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

// inspectRedis is inspect on the Redis engine: every unexpired entry of
// NAME read by one script on the server: holders of each recipe (owner,
// token, time left on the server's clock) and the waiting intents that
// waiting acquirers refresh at every attempt.
func inspectRedis(a *adminSession, w io.Writer, read func(context.Context, string) (redislock.Inspection, error)) int {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.connectTimeout)
	defer cancel()
	in, err := read(ctx, a.name)
	if err != nil {
		return failAdmin(a.ctx, redisErr(err))
	}
	out := make([]entryJSON, 0, len(in.Entries))
	for i, e := range in.Entries {
		j := entryJSON{
			Position: i, Entry: e.Recipe + "/" + e.Role + "/" + e.Owner, Kind: e.Recipe, Marker: e.Recipe,
			Session: e.Owner, State: e.Role, Holder: e.Role == "holder",
		}
		if e.Token != 0 {
			t := e.Token
			j.Token = &t
		}
		left := e.TTL.Milliseconds()
		j.LeaseLeftMS = &left
		switch {
		case e.Recipe == "leader" && e.Role == "holder" && e.ID != "":
			j.Note = "leader " + e.ID
		case e.Role == "waiting":
			j.Note = "waiting intent: expires unless the waiter retries"
		}
		out = append(out, j)
	}
	if a.cfg.json {
		err = writeJSON(w, out)
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "POS\tKIND\tSTATE\tOWNER\tTOKEN\tLEFT\tNOTE")
		for i, e := range out {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Position, termSafe(e.Kind), e.State, termSafe(e.Session),
				tokenText(in.Entries[i].Token), in.Entries[i].TTL.Round(time.Millisecond), termSafe(e.Note))
		}
		err = tw.Flush()
	}
	if err != nil {
		note("write: %v", err)
		return exitSoftware
	}
	if in.Permits > 0 {
		note("semaphore holders use N=%d", in.Permits)
	}
	if len(out) == 0 {
		note("%q has no entries on %s", a.name, a.b.engine)
	}
	return exitOK
}
