package engine

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/bridge"
)

// Config is what baton.Open hands an engine's opener: the URL, parsed
// once for every engine, and the options, validated once for every
// engine. Zero values mean the engine's documented default.
type Config struct {
	URL URL
	// TTL is the lease TTL or session timeout asked for; 0 is the
	// engine's default.
	TTL        time.Duration
	TokenFloor uint64
	// ConnectTimeout already bounds the ctx the opener gets; engines that
	// dial lazily pass it to their client's dial timeout too.
	ConnectTimeout time.Duration
	Observer       baton.Observer
	// Process is this client's holder record; ProcessData encodes it
	// once, for the engine to store with every grant.
	Process baton.Process
	// Getenv reads the engine's credential and TLS variables
	// (os.Getenv unless the caller gave baton.WithGetenv).
	Getenv func(string) string
}

// Opener connects to cfg.URL. ctx bounds the connect only (it carries
// the connect timeout): the client must not keep it.
type Opener func(ctx context.Context, cfg Config) (Conn, error)

// Driver is what an engine registers for its schemes.
type Driver struct {
	// Open connects.
	Open Opener
	// Check, if set, checks cfg offline, without connecting: a URL the
	// engine cannot use fails here (baton.CheckURL, the CLI's usage
	// check) rather than at the first connect. Open must check as much
	// itself.
	Check func(cfg Config) error
	// Lists says that the engine's Conn is a Lister, so that a program
	// can refuse a prefix before connecting (engine.Lists).
	Lists bool
	// Warn, if set, returns a warning about how cfg reaches its servers,
	// "" when there is none: credentials or locks that would cross the
	// network to another host unencrypted, or TLS that does not verify
	// the server. It runs offline, before Open, and never names a
	// secret. engine.Warning runs it for a program that shows it.
	Warn func(cfg Config) string
}

// Register makes baton.Open serve the given schemes with d. Engines call
// it from init. A scheme registered twice panics.
func Register(d Driver, schemes ...string) {
	for _, s := range schemes {
		bridge.Register(s, bridge.Driver{
			Open: func(ctx context.Context, raw string, o *bridge.Options) (any, string, error) {
				cfg, err := configOf(raw, o)
				if err != nil {
					return nil, "", err
				}
				ctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
				defer cancel()
				c, err := d.Open(ctx, cfg)
				if err != nil {
					return nil, "", err
				}
				return adapter{c}, c.Engine(), nil
			},
			Check: func(raw string, o *bridge.Options) error {
				cfg, err := configOf(raw, o)
				if err == nil && d.Check != nil {
					err = d.Check(cfg)
				}
				return err
			},
			Lists: d.Lists,
			Warn:  warner(d.Warn),
		})
	}
}

// warner is d.Warn as package bridge calls it.
func warner(warn func(Config) string) func(string, func(string) string) string {
	if warn == nil {
		return nil
	}
	return func(raw string, getenv func(string) string) string {
		if getenv == nil {
			getenv = os.Getenv
		}
		cfg, err := configOf(raw, &bridge.Options{Getenv: getenv})
		if err != nil {
			return "" // the URL's own error says more, and Open returns it
		}
		return warn(cfg)
	}
}

// configOf builds an opener's Config from baton.Open's options.
func configOf(raw string, o *bridge.Options) (Config, error) {
	u, err := ParseURL(raw)
	if err != nil {
		return Config{}, err
	}
	u.TLSName = o.TLSServerName
	obs, _ := o.Observer.(baton.Observer)
	return Config{
		URL: u, TTL: o.TTL, TokenFloor: o.TokenFloor, ConnectTimeout: o.ConnectTimeout,
		Observer: obs, Getenv: o.Getenv,
		Process: ThisProcess(o.Program, o.Labels),
	}, nil
}

// OrThisProcess returns p, or this process's holder record (ThisProcess)
// when p is the zero Process: the default of every engine's
// Options.Process.
func OrThisProcess(p baton.Process) baton.Process {
	if p.Host == "" && p.PID == 0 && p.Program == "" && len(p.Labels) == 0 {
		return ThisProcess("", nil)
	}
	return p
}

// ThisProcess is the holder record of this process: its host name, pid,
// program (the executable's base name when program is "") and labels.
func ThisProcess(program string, labels map[string]string) baton.Process {
	if program == "" && len(os.Args) > 0 {
		program = filepath.Base(os.Args[0])
	}
	return baton.Process{Host: hostname(), PID: os.Getpid(), Program: program, Labels: labels}
}

// hostname is read once: every client of the process records the same
// host, and memlock makes a client per simulated process.
var hostname = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})
