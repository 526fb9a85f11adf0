package backend

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// secretEnv are the variables whose values are passwords: baton's own, the
// drivers' and their command-line tools'. Logs, the exporter's page and its
// API never show them, whatever a driver echoes.
var secretEnv = []string{"BATON_ZK_PASSWORD", "BATON_ETCD_PASSWORD", "BATON_REDIS_PASSWORD", "BATON_SQL_PASSWORD",
	"PGPASSWORD", "MYSQL_PWD", "REDISCLI_AUTH", "ETCDCTL_PASSWORD"}

// scrubbedEnv are the variables --scrub-env removes from COMMAND's
// environment: those whose value is a password (secretEnv), ETCDCTL_USER
// (etcdctl takes "user:password" in it), and those naming a file that
// holds a password or a private key. User names, CA and client
// certificates stay: they are not secrets, and tools of COMMAND may need
// them. Users' own variables are not guessed at.
var scrubbedEnv = append(slices.Clone(secretEnv),
	"ETCDCTL_USER",
	"PGPASSFILE", "PGSSLKEY", "BATON_ETCD_KEY", "BATON_REDIS_KEY", "BATON_ZK_KEY", "BATON_SQL_KEY", "ETCDCTL_KEY")

// ScrubEnv returns env without the variables of scrubbedEnv.
func ScrubEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(scrubbedEnv, k) {
			out = append(out, kv)
		}
	}
	return out
}

// minSecret is the shortest secret replaced: a shorter one would blank
// out parts of ordinary words, and is no secret anyway.
const minSecret = 4

// SecretReplacer returns a Replacer that turns password (a backend URL's,
// as SplitURL decoded it) and the secret variables' values (getenv) into "***" in
// every form they may be printed in: as given, unescaped from the URL,
// URL-escaped, and escaped inside quotes as JSON and Go quoting write
// strings. It returns nil when there is nothing to hide.
func SecretReplacer(password string, getenv func(string) string) *strings.Replacer {
	secrets := []string{password}
	if raw, err := url.PathUnescape(password); err == nil {
		secrets = append(secrets, raw) // what the driver is given
	}
	for _, k := range secretEnv {
		secrets = append(secrets, getenv(k))
	}
	var pairs []string
	for _, s := range secrets {
		if len(s) < minSecret {
			continue
		}
		js, _ := json.Marshal(s)
		q := strconv.Quote(s)
		_, info, _ := strings.Cut(url.UserPassword("", s).String(), ":") // as SplitURL re-escapes it
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s), info, string(js[1 : len(js)-1]), q[1 : len(q)-1]} {
			pairs = append(pairs, form, "***")
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return strings.NewReplacer(pairs...)
}

// PasswordHint names where engine scheme takes a password from instead of
// the command line, for the warning of warnArgvPassword.
func PasswordHint(scheme string) string {
	switch scheme {
	case "zk":
		return "BATON_ZK_USER and BATON_ZK_PASSWORD"
	case "etcd", "etcds":
		return "BATON_ETCD_USER and BATON_ETCD_PASSWORD"
	case "redis", "rediss", "redlock":
		return "BATON_REDIS_USERNAME and BATON_REDIS_PASSWORD"
	case "postgres", "postgresql":
		return "BATON_SQL_USER and BATON_SQL_PASSWORD, PGPASSWORD, or a password file (~/.pgpass, PGPASSFILE)"
	case "mysql":
		return "BATON_SQL_USER and BATON_SQL_PASSWORD, or MYSQL_PWD"
	}
	return "the engine's environment variables"
}

// warnArgvPassword warns, once per Env, when the password came on the
// command line: every user of the host can read it (ps, /proc/PID/cmdline)
// and it stays in shell history. The warning never holds the password.
func warnArgvPassword(env *cli.Env, cfg *Config, u URL) {
	if cfg.FromArgv && u.HasPassword() {
		env.NoteOnce("argv-password", "warning: --backend holds a password, which other users of this host can read (ps) and shell history keeps; "+
			"give it in %s instead", PasswordHint(u.Scheme))
	}
}

// Scrubber returns a function that replaces the URL's password and the
// secret variables' values (getenv), in every form a driver may quote
// them in, by "***", and redacts secret query parameters.
func Scrubber(u URL, getenv func(string) string) func(string) string {
	r := SecretReplacer(u.Password, getenv)
	return func(msg string) string {
		if r != nil {
			msg = r.Replace(msg)
		}
		return redactQuery(msg)
	}
}

// ScrubbedError shows a message without secrets but keeps the error's
// chain, for the exit code.
type ScrubbedError struct {
	Msg string
	Err error
}

func (e ScrubbedError) Error() string { return e.Msg }
func (e ScrubbedError) Unwrap() error { return e.Err }
