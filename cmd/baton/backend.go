package main

import (
	"context"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

// backend is a connected engine, as much of it as the commands need.
type backend struct {
	engine string // BATON_ENGINE: "zk", "etcd", "redis", "postgres", …
	// client is the engine as baton.Open gave it: inspect and the
	// exporter read every engine through its Inspect, clean finds the
	// queue engines' entries through baton.As, and close closes it.
	client *baton.Client
	// locker returns the coordination object `run` takes for mode.
	locker func(name string, mode lockMode, permits int) (baton.Locker, error)
	// election returns the election `elect` campaigns in.
	election func(name string) (baton.Elector, error)
	// granted, if set, is called once after the first grant, to report a
	// TTL the server changed.
	granted func()
	// serverTTL, if set, asks the server which TTL it gives a client that
	// asks for --ttl (etcd rounds and clamps leases, ZooKeeper negotiates
	// sessions); the other engines keep what they are given.
	serverTTL func(ctx context.Context) (time.Duration, error)
}

// close ends the backend's sessions.
func (b *backend) close() { _ = b.client.Close() }

// queue returns the raw entries of the engines whose locks are queues of
// entries an operator may remove (ZooKeeper, etcd): `clean` lists and
// removes them through it; ok is false on the others. If it is also a
// queuekit.TokenBounder, clean and the exporter bound the tokens it cannot
// read exactly.
func (b *backend) queue() (q queueAdmin, ok bool) { return baton.As[queueAdmin](b.client) }

// queueAdmin is what `clean` needs of a queue engine.
type queueAdmin interface {
	queuekit.Inspector
	queuekit.Remover
}

// backendType is one engine of the CLI, registered by its backend_*.go
// file (register, from init): adding an engine is adding one file.
type backendType struct {
	// schemes are the backend URL schemes it serves, lower case.
	schemes []string
	// parse checks a URL offline: a bad URL is a usage error before
	// anything connects.
	parse func(u engineURL) error
	// open connects within cfg.connectTimeout (bounded also by ctx), with
	// opts (openOptions); name is the lock the command is about.
	open func(ctx context.Context, cfg *runConfig, u engineURL, name string, opts []baton.Option) (*backend, error)
	// checkHold, if set, checks a run or elect command line offline for
	// what the engine cannot do (cmd is "run" or "elect").
	checkHold func(cmd string, u engineURL, cfg *runConfig) error
	// noClean, if set, is the usage error of `baton clean`: the engine
	// leaves nothing behind for it to remove.
	noClean func(u engineURL) error
}

// backendTypes maps each registered scheme to its engine.
var backendTypes = map[string]*backendType{}

// register adds e under its schemes. Two engines claiming one scheme is a
// bug of this program.
func register(e *backendType) {
	for _, s := range e.schemes {
		if backendTypes[s] != nil {
			panic("baton: scheme " + s + " registered twice")
		}
		backendTypes[s] = e
	}
}

// engineOf returns the engine of a backend URL, or a usage error naming
// the schemes there are.
func engineOf(u engineURL) (*backendType, error) {
	if e := backendTypes[u.scheme]; e != nil {
		return e, nil
	}
	if knownLater[u.scheme] {
		return nil, cli.Usagef("backend %s: the %s engine is not available in this release (%s are)", u.redacted, u.scheme, knownSchemes())
	}
	return nil, cli.Usagef("backend %s: unknown scheme %q (%s)", u.redacted, u.scheme, knownSchemes())
}

// engineURL is a backend URL split from its credentials, so that the
// credentials are never printed: redacted is safe to show.
type engineURL struct {
	scheme string
	// orig is the URL with its credentials, the userinfo re-escaped so
	// that every driver's URL parser reads it back as user and password
	// decode to: never print it.
	orig     string
	raw      string // without credentials
	user     string // percent-decoded, once, here for every engine
	password string // percent-decoded, once, here for every engine
	hasUser  bool
	redacted string
	// tlsName, when set, is the name TLS verifies the servers'
	// certificates against instead of the hosts dialled: runConfig's
	// tlsServerName, copied here by openBackend.
	tlsName string
}

// splitURL takes user:pass@ out of a backend URL and checks its hosts
// offline, through engine.ParseURL: the one parser every engine's Open
// uses too (a password may hold '/', '?', '#' or '@' unescaped; the user
// and password are percent-decoded once, there).
func splitURL(raw string) (engineURL, error) {
	if scheme, _, ok := strings.Cut(raw, "://"); !ok || scheme == "" {
		return engineURL{}, cli.Usagef("backend URL %q: want scheme://… (%s)", engine.Redact(raw), knownSchemes())
	}
	e, err := engine.ParseURL(raw)
	if err != nil {
		return engineURL{}, cli.Usagef("%v", err) // a usage error, as every bad command line is
	}
	return engineURL{scheme: e.Scheme, orig: e.Orig, raw: e.Raw, user: e.User, password: e.Password,
		hasUser: e.HasUser, redacted: e.Redacted}, nil
}

// childBackend is the backend as COMMAND's BATON_BACKEND gets it, so that
// a nested baton run finds the backend its parent used: without a
// password, in the userinfo or as a query parameter (a user alone is no
// secret and stays). dropped reports that a password was left out:
// credentials the parent took from the environment are inherited with it,
// but one written in the URL is not handed on.
func childBackend(raw string) (backend string, dropped bool) {
	u, err := splitURL(raw)
	if err != nil {
		return "", false
	}
	backend = u.raw
	if u.hasUser && u.password == "" {
		backend = u.orig // the user alone
	}
	dropped = u.password != ""
	base, query, ok := strings.Cut(backend, "?")
	if !ok {
		return backend, dropped
	}
	var keep []string
	for _, kv := range strings.Split(query, "&") {
		if secretParam.MatchString("?" + kv) {
			dropped = true
			continue
		}
		keep = append(keep, kv)
	}
	if len(keep) == 0 {
		return base, dropped
	}
	return base + "?" + strings.Join(keep, "&"), dropped
}

// secretParam matches a password given as a URL parameter (PostgreSQL
// URLs accept password= and sslpassword=).
var secretParam = regexp.MustCompile(`(?i)([?&](?:ssl)?(?:password|passwd|pass)=)[^&#]*`)

// redactQuery hides password parameters of a URL.
func redactQuery(raw string) string { return secretParam.ReplaceAllString(raw, "${1}***") }

// knownSchemes lists the backends of this release, for messages.
func knownSchemes() string {
	var out []string
	for _, s := range slices.Sorted(maps.Keys(backendTypes)) {
		out = append(out, s+"://")
	}
	return strings.Join(out, ", ")
}

// knownLater are schemes whose engines arrive in a later release.
var knownLater = map[string]bool{}

// openBackend connects to the engine named by cfg.backend within
// cfg.connectTimeout (bounded also by ctx). Errors are classified by
// cli.Classify: usage for bad URLs, ErrAuth, else unavailable.
func openBackend(ctx context.Context, cfg *runConfig, name string) (*backend, error) {
	u, e, err := backendOf(cfg.backend)
	if err != nil {
		return nil, err
	}
	warnArgvPassword(cfg, u)
	warnTransport(u)
	u.tlsName = cfg.tlsServerName
	return e.open(ctx, cfg, u, name, openOptions(cfg, u))
}

// openOptions are baton.Open's options for cfg, the same on every engine:
// --ttl, --connect-timeout, the run's observer, the TLS server name, and
// the holder record's program. The record names COMMAND (run, elect) by
// its base name alone: its arguments and environment may hold secrets,
// and never go into a record that every inspect shows. Without COMMAND
// (inspect, exporter, drill) it is baton's own name. The engines take
// the URL's credentials and TLS files from the URL and the environment.
func openOptions(cfg *runConfig, u engineURL) []baton.Option {
	opts := []baton.Option{baton.WithTTL(cfg.ttl), baton.WithConnectTimeout(cfg.connectTimeout),
		baton.WithObserver(cfg.observer), baton.WithTLSServerName(u.tlsName)}
	if len(cfg.command) > 0 {
		opts = append(opts, baton.WithProgram(filepath.Base(cfg.command[0])))
	}
	return opts
}

// parseBackend checks the URL without connecting, so that a bad URL is a
// usage error before anything else happens.
func parseBackend(raw string) error {
	u, e, err := backendOf(raw)
	if err != nil {
		return err
	}
	return e.parse(u)
}

// backendOf splits a backend URL (checking its hosts) and finds its
// engine: what opening and parsing a backend both start with.
func backendOf(raw string) (engineURL, *backendType, error) {
	u, err := splitURL(raw)
	if err != nil {
		return u, nil, err
	}
	e, err := engineOf(u)
	return u, e, err
}

// checkHold checks a run or elect command line against the backend's
// engine offline (an unknown or bad URL is left to parseBackend).
func checkHold(cmd string, cfg *runConfig) error {
	u, err := splitURL(cfg.backend)
	if err != nil {
		return nil
	}
	if e := backendTypes[u.scheme]; e != nil && e.checkHold != nil {
		return e.checkHold(cmd, u, cfg)
	}
	return nil
}

// checkClean refuses `baton clean` on an engine that leaves nothing for
// it to remove.
func checkClean(raw string) error {
	u, err := splitURL(raw)
	if err != nil {
		return nil
	}
	if e := backendTypes[u.scheme]; e != nil && e.noClean != nil {
		return e.noClean(u)
	}
	return nil
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
