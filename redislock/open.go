package redislock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/internal/rediseval"
)

func init() {
	engine.Register(engine.Driver{Open: open, Check: check, Warn: warning}, "redis", "rediss")
}

// envPrefix starts the environment variables a redis:// or rediss:// URL
// takes what it does not say from, as the CLI always has:
// BATON_REDIS_USERNAME and BATON_REDIS_PASSWORD when the URL has no
// credentials; for TLS, BATON_REDIS_CACERT (else the system roots) and
// the client pair BATON_REDIS_CERT / BATON_REDIS_KEY.
const envPrefix = "BATON_REDIS"

// open serves baton.Open for redis://[user:pass@]host:port[/db][?db=N]
// and rediss:// (TLS): a client on a go-redis client of its own, which it
// closes with it, once a PING proves the connection and the credentials.
// The PING is retried until ctx ends or the server refuses them.
func open(ctx context.Context, cfg engine.Config) (engine.Conn, error) {
	ro, o, err := parse(cfg)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(ro)
	c, err := newClient(rdb, o)
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	if err := ping(ctx, rdb); err != nil {
		_ = c.close()
		_ = rdb.Close()
		return nil, fmt.Errorf("redislock: connect %s: %w", cfg.URL.Redacted, engine.Scrub(err, cfg.URL.Password, ro.Password))
	}
	return connOf(c, rdb.Close), nil
}

// check checks a redis:// or rediss:// URL and the options offline.
func check(cfg engine.Config) error {
	_, o, err := parse(cfg)
	if err == nil {
		_, err = o.validate()
	}
	return err
}

// parse reads cfg as the go-redis options of the connection and this
// engine's Options. baton sets the connection's timeouts, retries and
// name itself, so the URL takes no parameter but db= (see params).
func parse(cfg engine.Config) (*redis.Options, Options, error) {
	if err := params(cfg.URL); err != nil {
		return nil, Options{}, err
	}
	ro, err := redis.ParseURL(cfg.URL.Orig)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the URL, password included
		}
		return nil, Options{}, cfg.URL.Badf("%v", engine.Scrub(err, cfg.URL.Password))
	}
	if !cfg.URL.HasUser {
		ro.Username, ro.Password = cfg.Getenv(envPrefix+"_USERNAME"), cfg.Getenv(envPrefix+"_PASSWORD")
	}
	if ro.TLSConfig != nil {
		tc, err := cfg.TLSFromEnv(envPrefix)
		if err != nil {
			return nil, Options{}, err
		}
		ro.TLSConfig.MinVersion, ro.TLSConfig.RootCAs, ro.TLSConfig.Certificates = tc.MinVersion, tc.RootCAs, tc.Certificates
		if tc.ServerName != "" {
			ro.TLSConfig.ServerName = tc.ServerName
		}
	}
	ttl := cfg.TTL
	if ttl == 0 {
		ttl = defaultTTL
	}
	ro.DialTimeout = cfg.ConnectTimeout
	// baton retries acquires itself and bounds every call by its own
	// deadlines; a resent script could take a second permit.
	ro.MaxRetries = -1
	ro.ContextTimeoutEnabled = true // deadlines cut blocked reads: no goroutine per call
	ro.ReadTimeout = max(ttl/3, 100*time.Millisecond)
	ro.WriteTimeout = ro.ReadTimeout
	ro.ClientName = "baton"
	o := Options{TTL: cfg.TTL, TokenFloor: cfg.TokenFloor, Observer: cfg.Observer, Process: cfg.Process}
	return ro, o, nil
}

// params refuses every URL parameter but db=: go-redis reads many more,
// and baton sets the timeouts, retries and client name itself (a
// parameter would be silently overridden), while skip_verify=true would
// turn certificate verification off and hand the password to whoever
// answers, quietly. A private CA goes in BATON_REDIS_CACERT instead.
func params(u engine.URL) error {
	_, query, _ := strings.Cut(u.Raw, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return u.Badf("%v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch k {
		case "db":
		case "skip_verify":
			return u.Badf("skip_verify turns off the verification of the server's certificate: refused " +
				"(give its CA in BATON_REDIS_CACERT)")
		default:
			return u.Badf("unknown parameter %q: only db= is understood "+
				"(baton sets timeouts, retries and the client name itself)", k)
		}
	}
	return nil
}

// ping pings until it works, the server refuses the credentials, or ctx
// ends; the error is marked with baton.ErrAuth or baton.ErrUnavailable.
// The client cuts a blocked read at ctx's deadline
// (ContextTimeoutEnabled), so a silent server costs no more than ctx.
func ping(ctx context.Context, rdb *redis.Client) error {
	return engine.Retry(ctx, func() error { return rediseval.Classify(rdb.Ping(ctx).Err()) })
}
