package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/rediseval"
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
		schemes:   []string{"redis", "rediss"},
		parse:     func(u engineURL) error { return baton.CheckURL(u.orig) },
		open:      openRedis,
		checkHold: func(cmd string, _ engineURL, cfg *runConfig) error { return checkRedisTTL(cmd, "Redis", cfg.ttl) },
		noClean: func(engineURL) error {
			return usagef("clean: not applicable to the Redis engine: every key and waiting intent it writes expires by itself " +
				"(a dead holder's within --ttl); run baton inspect to see holders, tokens, time left and waiters")
		},
	})
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

// redisErr marks a Redis or Redlock failure for its exit code: a
// refusal of the credentials, an ACL or TLS with baton.ErrAuth (exit 77),
// anything else with baton.ErrUnavailable (69); a bad option (64) stays.
func redisErr(err error) error { return rediseval.Classify(err) }

// markRedisRefusal marks an acquire's Redis refusal with baton.ErrAuth: a
// user whose ACL lacks the lock's keys connects fine and is refused only
// by the acquire script.
func markRedisRefusal(err error) error { return markRefusal(err, rediseval.Refused) }

// redisOptions are baton.Open's options for a redis://, rediss:// or
// redlock:// backend: the command line's TTL, connect timeout, observer
// and TLS server name. The engines parse the URL and take credentials and
// TLS files from the environment themselves.
func redisOptions(cfg *runConfig, u engineURL) []baton.Option {
	return []baton.Option{baton.WithTTL(cfg.ttl), baton.WithConnectTimeout(cfg.connectTimeout),
		baton.WithObserver(cfg.observer), baton.WithTLSServerName(u.tlsName)}
}

// openRedis connects to a Redis primary through package redislock, which
// proves the connection (and AUTH) by a PING, retried until
// --connect-timeout. A plain-text connection that failed is checked for
// a server that speaks TLS, so that the message names the cure.
func openRedis(ctx context.Context, cfg *runConfig, u engineURL, _ string) (*backend, error) {
	bc, err := baton.Open(ctx, u.orig, redisOptions(cfg, u)...)
	if err != nil {
		if u.scheme == "redis" && !errors.Is(err, baton.ErrAuth) && !errors.Is(err, baton.ErrInvalidOption) {
			if tlsErr := plainToTLS(ctx, urlHosts(u), "rediss"); tlsErr != nil {
				err = fmt.Errorf("%w (%w)", tlsErr, err)
			}
		}
		return nil, u.scrub(err)
	}
	c, _ := baton.As[*redislock.Client](bc)
	return refusing(&backend{
		engine: "redis",
		locker: func(name string, mode lockMode, permits int) (baton.Locker, error) {
			return pickLocker(name, mode, permits, c.Mutex, c.RWMutex, c.Semaphore)
		},
		election: func(name string) (baton.Elector, error) { return c.Election(name) },
		inspect:  func(a *adminSession, w io.Writer) int { return inspectRedis(a, w, c.Inspect) },
		view:     redisView(c.Inspect),
		close:    func() { _ = bc.Close() },
	}, markRedisRefusal), nil
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
