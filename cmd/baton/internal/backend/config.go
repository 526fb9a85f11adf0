// Package backend is the --backend of every baton command: the URL
// parsed once into the command's Config, the embedded default, the
// connect through baton.Open with the options every engine shares, the
// warnings about credentials and transport, the redaction of secrets,
// and the few powers of the CLI's own that an engine has beyond
// baton.Open (powers, in the engine_*.go files). An engine the CLI needs
// nothing more of is one import in engines.go.
package backend

import (
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// Defaults and caps every connecting command shares.
const (
	// DefaultTTL is the session timeout (ZooKeeper) or lease TTL (etcd): how
	// long a silent holder keeps the lock before the next waiter may have it.
	DefaultTTL = 15 * time.Second
	// DefaultConnectTimeout bounds reaching the backend, so a down backend
	// fails the run (exit 69) instead of hanging a cron job.
	DefaultConnectTimeout = 10 * time.Second
	// MaxTTL caps --ttl: a holder silent for a day still keeping the
	// lock from every waiter is a typo (15h for 15s), and past 24.8 days
	// ZooKeeper's client overflows its int32 milliseconds.
	MaxTTL = 24 * time.Hour
	// MaxConnectTimeout caps --connect-timeout: an hour is already far
	// past any use.
	MaxConnectTimeout = time.Hour
)

// Config is what a command needs to reach its backend.
type Config struct {
	Backend  string // --backend, else $BATON_BACKEND, else the embedded default
	FromArgv bool   // Backend came from --backend (the command line)
	Embedded bool   // Backend is the embedded default (its directory is created)
	ReadOnly bool   // inspect, exporter: do not create the SQL schema
	TTL      time.Duration
	// ConnectTimeout bounds the connect (--connect-timeout).
	ConnectTimeout time.Duration
	// Observer receives the engine's events (run, elect); nil elsewhere.
	Observer baton.Observer
	// TLSServerName, when set, is the name every TLS connection verifies
	// the server's certificate against, instead of the host it dials.
	// Only baton drill sets it: its clients dial the servers through
	// fault proxies on 127.0.0.1, and the certificates name the real hosts.
	TLSServerName string
	// Program is COMMAND's base name for the holder record (run, elect);
	// "" records baton's own name.
	Program string
	// URL is Backend parsed (SetBackend), once; urlErr is why it did not
	// parse, reported when the command checks its backend (Check).
	URL    URL
	urlErr error
}

// SetBackend sets the backend URL and parses it, once for the command.
func (cfg *Config) SetBackend(raw string) {
	cfg.Backend = raw
	cfg.URL, cfg.urlErr = SplitURL(raw)
}

// CheckCommon validates the flags every connecting command shares.
func CheckCommon(cmd string, cfg *Config) error {
	switch {
	case cfg.TTL <= 0:
		return cli.Usagef("%s: --ttl must be positive, got %v", cmd, cfg.TTL)
	case cfg.TTL > MaxTTL:
		return cli.Usagef("%s: --ttl %v is over the %v cap: a silent holder would keep the lock that long", cmd, cfg.TTL, MaxTTL)
	case cfg.ConnectTimeout <= 0:
		return cli.Usagef("%s: --connect-timeout must be positive, got %v", cmd, cfg.ConnectTimeout)
	case cfg.ConnectTimeout > MaxConnectTimeout:
		return cli.Usagef("%s: --connect-timeout %v is over the %v cap", cmd, cfg.ConnectTimeout, MaxConnectTimeout)
	}
	return nil
}

// Resolve falls back to $BATON_BACKEND when --backend was not given
// (given is false), and to the embedded default (a SQLite file in the
// user's state directory) when neither names one; the URL is parsed
// then. An explicitly empty --backend, or a BATON_BACKEND that is set
// but empty or blank, is a mistake (an unexpanded variable in a unit
// file, say), not a request for the default.
func Resolve(cmd string, env *cli.Env, cfg *Config, given bool) error {
	raw := cfg.Backend
	if !given {
		raw = env.Getenv("BATON_BACKEND")
	}
	switch _, set := env.LookupEnv("BATON_BACKEND"); {
	case strings.TrimSpace(raw) != "":
		cfg.FromArgv = given
		cfg.SetBackend(raw)
		return nil
	case given:
		return cli.Usagef("%s: --backend is empty", cmd)
	case set || raw != "":
		return cli.Usagef("%s: BATON_BACKEND is set but empty: name a backend, or unset it for the embedded default", cmd)
	}
	dir, err := StateDir(env.Getenv)
	if err != nil {
		return cli.Usagef("%s: no --backend, no BATON_BACKEND, and no state directory for the embedded default: %v", cmd, err)
	}
	cfg.Embedded = true
	cfg.SetBackend("sqlite://" + filepath.Join(dir, "locks.db"))
	return nil
}

// NoteEmbedded says, in one line, that the embedded default is in use,
// but only to a person: when stderr is a terminal. A cron job or a unit
// (stderr a pipe or the journal) stays quiet, as a run that went well
// must be; with --log-level info the "acquired" record names the backend
// anyway.
func NoteEmbedded(env *cli.Env, cfg *Config) {
	if cfg.Embedded && env.StderrIsTerminal() {
		env.Note("no --backend or BATON_BACKEND: using the embedded default %s (it excludes runs of this host only)", cfg.Backend)
	}
}

// StateDir is the user's state directory for baton: $XDG_STATE_HOME/baton
// (only when absolute, as the XDG spec says), else ~/.local/state/baton.
// It holds the embedded default backend and clean's evidence.
func StateDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "baton"), nil
	}
	home := getenv("HOME") // as os.UserHomeDir reads it
	if home == "" {
		return "", errors.New("no XDG_STATE_HOME and no home directory: $HOME is not defined")
	}
	return filepath.Join(home, ".local", "state", "baton"), nil
}
