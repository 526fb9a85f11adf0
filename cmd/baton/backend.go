package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/queue"
	"github.com/baton-go/baton/redislock"
	"github.com/baton-go/baton/redlock"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// backend is a connected engine, as much of it as the commands need.
type backend struct {
	engine string // "zk", "etcd", "postgres", "mysql", "sqlite"
	// locker returns the coordination object `run` takes for mode.
	locker func(name string, mode lockMode, permits int) (baton.Locker, error)
	// election returns the election `elect` campaigns in.
	election func(name string) (baton.Elector, error)
	// inspector, remover and bounder serve `inspect` and `clean`; bounder
	// is nil where tokens are exact (etcd).
	inspector queue.Inspector
	remover   queue.Remover
	bounder   queue.TokenBounder
	// rows serves inspect on the SQL engine instead of inspector: a row
	// per holder with its deadline on the database clock (waiters hold no
	// row). clean does not apply there.
	rows func(ctx context.Context, name string) ([]sqlRow, error)
	// redis serves inspect on the Redis engine: holders and waiting
	// intents with their time left on the server's clock.
	redis func(ctx context.Context, name string) (redislock.Inspection, error)
	// redlock serves inspect on the Redlock engine: what each node holds.
	redlock func(ctx context.Context, name string) ([]redlock.NodeEntry, error)
	close   func()
	// granted, if set, is called once after the first grant, to report a
	// TTL the server changed.
	granted func()
}

// engineURL is a backend URL split from its credentials, so that the
// credentials are never printed: redacted is safe to show.
type engineURL struct {
	scheme   string
	orig     string // as given, with credentials: never print it
	raw      string // without credentials
	user     string
	password string
	hasUser  bool
	redacted string
}

// splitURL takes user:pass@ out of a backend URL. net/url cannot parse the
// multi-host form (h1:2181,h2:2181), so the userinfo is cut by hand: it is
// what precedes the last "@" of the authority.
func splitURL(raw string) (engineURL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" {
		return engineURL{}, usagef("backend URL %q: want scheme://… (%s)", redactQuery(raw), knownSchemes)
	}
	u := engineURL{scheme: strings.ToLower(scheme), orig: raw, raw: raw, redacted: redactQuery(raw)}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		info := authority[:i]
		u.user, u.password, _ = strings.Cut(info, ":")
		u.hasUser = true
		u.raw = scheme + "://" + authority[i+1:] + path
		u.redacted = redactQuery(scheme + "://" + u.user + ":***@" + authority[i+1:] + path)
	}
	return u, nil
}

// secretParam matches a password given as a URL parameter (PostgreSQL
// URLs accept password= and sslpassword=).
var secretParam = regexp.MustCompile(`(?i)([?&](?:ssl)?(?:password|passwd|pass)=)[^&#]*`)

// redactQuery hides password parameters of a URL.
func redactQuery(raw string) string { return secretParam.ReplaceAllString(raw, "${1}***") }

// knownSchemes lists the backends of this release, for messages.
const knownSchemes = "zk://, etcd://, etcds://, postgres://, mysql://, sqlite://, redis://, rediss://, redlock://"

// knownLater are schemes whose engines arrive in a later release.
var knownLater = map[string]bool{}

// openBackend connects to the engine named by cfg.backend within
// cfg.connectTimeout (bounded also by ctx). Errors are classified by
// classify: usage for bad URLs, ErrAuth, else unavailable.
func openBackend(ctx context.Context, cfg *runConfig, name string) (*backend, error) {
	u, err := splitURL(cfg.backend)
	if err != nil {
		return nil, err
	}
	switch u.scheme {
	case "zk":
		return openZK(ctx, cfg, u)
	case "etcd", "etcds":
		return openEtcd(ctx, cfg, u, name)
	case "postgres", "postgresql", "mysql", "sqlite":
		return openSQL(ctx, cfg, u)
	case "redis", "rediss":
		return openRedis(ctx, cfg, u)
	case "redlock":
		return openRedlock(ctx, cfg, u)
	}
	return nil, parseBackend(cfg.backend)
}

// parseBackend checks the URL without connecting, so that a bad URL is a
// usage error before anything else happens.
func parseBackend(raw string) error {
	u, err := splitURL(raw)
	if err != nil {
		return err
	}
	switch u.scheme {
	case "zk":
		if err := parseZK(u); err != nil {
			return err
		}
	case "etcd", "etcds":
		if _, _, err := etcdlock.ParseURL(u.raw); err != nil {
			return usagef("backend %s: %v", u.redacted, err)
		}
	case "postgres", "postgresql", "mysql", "sqlite":
		if _, err := parseSQL(u, defaultConnectTimeout); err != nil {
			return err
		}
	case "redis", "rediss":
		if _, err := parseRedis(u, &runConfig{ttl: defaultTTL, connectTimeout: defaultConnectTimeout}); err != nil {
			return err
		}
	case "redlock":
		if _, err := parseRedlock(u, &runConfig{ttl: defaultTTL, connectTimeout: defaultConnectTimeout}); err != nil {
			return err
		}
	default:
		if knownLater[u.scheme] {
			return usagef("backend %s: the %s engine is not available in this release (%s are)", u.redacted, u.scheme, knownSchemes)
		}
		return usagef("backend %s: unknown scheme %q (%s)", u.redacted, u.scheme, knownSchemes)
	}
	return nil
}

func openEtcd(ctx context.Context, cfg *runConfig, u engineURL, name string) (*backend, error) {
	endpoints, useTLS, err := etcdlock.ParseURL(u.raw)
	if err != nil {
		return nil, usagef("backend %s: %v", u.redacted, err)
	}
	user, pass := u.user, u.password
	if !u.hasUser {
		user, pass = os.Getenv("BATON_ETCD_USER"), os.Getenv("BATON_ETCD_PASSWORD")
	}
	ttl := cfg.ttl.Truncate(time.Second)
	if ttl < cfg.ttl {
		ttl += time.Second
	}
	if ttl != cfg.ttl {
		note("--ttl %v rounded up to %v: etcd leases are whole seconds", cfg.ttl, ttl)
	}
	ccfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: cfg.connectTimeout,
		Username:    user,
		Password:    pass,
		Logger:      zap.NewNop(),
	}
	if useTLS {
		tc, err := etcdTLS()
		if err != nil {
			return nil, err
		}
		ccfg.TLS = tc
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	defer cancel()
	cli, err := clientv3.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", u.redacted, etcdErr(err))
	}
	// clientv3.New does not wait for a connection unless it authenticates:
	// probe with a linearizable read, which also needs a quorum.
	if _, err := cli.Get(cctx, name, clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, fmt.Errorf("connect %s: %w", u.redacted, etcdErr(err))
	}
	lc, err := etcdlock.New(cli, etcdlock.Options{TTL: ttl})
	if err != nil {
		cli.Close()
		return nil, err
	}
	return &backend{
		engine: "etcd",
		locker: func(name string, mode lockMode, permits int) (baton.Locker, error) {
			return pickLocker(name, mode, permits, lc.Mutex, lc.RWMutex, lc.Semaphore)
		},
		election:  func(n string) (baton.Elector, error) { return lc.Election(n) },
		inspector: lc,
		remover:   lc,
		close:     func() { _ = lc.Close(); _ = cli.Close() },
		granted: func() {
			if got := lc.GrantedTTL(); got != 0 && got != ttl {
				note("--ttl %v: the etcd server granted a %v lease (its minimum or maximum)", ttl, got)
			}
		},
	}, nil
}

// etcdErr marks authentication and TLS failures with baton.ErrAuth and
// everything else with baton.ErrUnavailable. gRPC flattens TLS handshake
// errors into text, so those are recognised by their message.
func etcdErr(err error) error {
	for _, auth := range []error{rpctypes.ErrAuthFailed, rpctypes.ErrPermissionDenied, rpctypes.ErrUserEmpty,
		rpctypes.ErrInvalidAuthToken, rpctypes.ErrAuthOldRevision, rpctypes.ErrGRPCAuthFailed, rpctypes.ErrGRPCPermissionDenied} {
		if errors.Is(err, auth) || err.Error() == auth.Error() {
			return fmt.Errorf("%w: %w", baton.ErrAuth, err)
		}
	}
	msg := err.Error()
	if strings.Contains(msg, "authentication handshake failed") || strings.Contains(msg, "x509:") {
		return fmt.Errorf("%w: %w", baton.ErrAuth, err)
	}
	if errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
}

// etcdTLS builds the client TLS config from BATON_ETCD_CACERT (else the
// system roots) and the optional client pair BATON_ETCD_CERT/_KEY.
func etcdTLS() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := os.Getenv("BATON_ETCD_CACERT"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, usagef("BATON_ETCD_CACERT: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usagef("BATON_ETCD_CACERT %s: no PEM certificates", ca)
		}
		tc.RootCAs = pool
	}
	cert, key := os.Getenv("BATON_ETCD_CERT"), os.Getenv("BATON_ETCD_KEY")
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, usagef("BATON_ETCD_CERT/BATON_ETCD_KEY: %v", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// pickLocker returns the Locker of mode from an engine's recipe
// constructors: the mutex, a side of the read/write lock, or the
// semaphore (each Acquire is one permit; a disagreeing N is noted). Every
// engine with the four recipes shares it.
func pickLocker[M baton.Locker, RW rwLocker, S semLocker[D], D any](name string, mode lockMode, permits int,
	mutex func(string) (M, error),
	rw func(string) (RW, error),
	sem func(string, int) (S, error),
) (baton.Locker, error) {
	switch mode {
	case modeRead:
		l, err := rw(name)
		if err != nil {
			return nil, err
		}
		return l.RLocker(), nil
	case modeWrite:
		l, err := rw(name)
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return l, nil
	case modeShared:
		s, err := sem(name, permits)
		if err != nil {
			return nil, err
		}
		s.OnDisagreement(func(d D) { note("%v", d) })
		return s, nil
	}
	m, err := mutex(name)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// rwLocker is an engine's read/write lock as pickLocker uses it.
type rwLocker interface {
	baton.Locker
	RLocker() baton.Locker
}

// semLocker is an engine's semaphore as pickLocker uses it.
type semLocker[D any] interface {
	baton.Locker
	OnDisagreement(func(D))
}
