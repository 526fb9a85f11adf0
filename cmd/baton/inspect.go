package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/baton-go/baton/engine"
)

// adminConfig is a parsed `baton inspect` or `baton clean` command line.
type adminConfig struct {
	runConfig           // backend, connect timeout, session TTL, NAME
	json         bool   // inspect --json
	apply        bool   // clean --apply
	forceRelease string // clean --force-release ENTRY
	forceSet     bool
	evidenceDir  string // clean --evidence-dir
}

// parseAdmin parses `inspect` or `clean` (cmd) arguments: flags before or
// after the one NAME.
func parseAdmin(cmd string, args []string, getenv func(string) string) (*adminConfig, error) {
	cfg := &adminConfig{runConfig: runConfig{ttl: defaultTTL, connectTimeout: defaultConnectTimeout}}
	backendGiven := false
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("backend", "", func(s string) error { cfg.backend, backendGiven = s, true; return nil })
	fs.Var(durationValue{d: &cfg.connectTimeout}, "connect-timeout", "")
	switch cmd {
	case "inspect":
		fs.BoolVar(&cfg.json, "json", false, "")
	case "clean":
		fs.BoolVar(&cfg.apply, "apply", false, "")
		fs.Func("force-release", "", func(s string) error { cfg.forceRelease, cfg.forceSet = s, true; return nil })
		fs.StringVar(&cfg.evidenceDir, "evidence-dir", "", "")
	}
	positional, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		cfg.help = true
		return cfg, nil
	}
	if err != nil {
		return nil, usagef("%s: %v", cmd, err)
	}
	switch {
	case len(positional) == 0:
		return nil, usagef("%s: missing NAME (baton %s [flags] NAME)", cmd, cmd)
	case len(positional) > 1:
		return nil, usagef("%s: unexpected %q: %s takes one NAME", cmd, positional[1], cmd)
	}
	cfg.name = positional[0]
	if err := checkCommon(cmd, &cfg.runConfig); err != nil {
		return nil, err
	}
	if err := resolveBackend(cmd, &cfg.runConfig, backendGiven, getenv); err != nil {
		return nil, err
	}
	if cmd == "clean" {
		if err := checkClean(cfg.backend); err != nil {
			return nil, err
		}
	}
	cfg.readOnly = cmd == "inspect"
	return cfg, nil
}

// adminSession is a connected inspect or clean: the backend, the
// normalised name, and the signal context.
type adminSession struct {
	cfg  *adminConfig
	name string
	b    *backend
	ctx  context.Context
	stop func()
}

// openAdmin parses, validates and connects for inspect or clean. A
// non-negative code means the command is over with that exit code.
func openAdmin(cmd, usage string, args []string) (*adminSession, int) {
	cfg, err := parseAdmin(cmd, args, os.Getenv)
	if err != nil {
		return nil, fail(err)
	}
	if cfg.help {
		return nil, showHelp(usage)
	}
	name, err := engine.ValidateName(cfg.name)
	if err != nil {
		return nil, fail(err)
	}
	if cfg.forceSet {
		if err := refuseDirectory(name, cfg.forceRelease); err != nil {
			return nil, fail(err)
		}
	}
	if err := parseBackend(cfg.backend); err != nil {
		return nil, fail(err)
	}
	noteEmbedded(&cfg.runConfig)
	ctx, stop := signal.NotifyContext(context.Background(), forwarded...)
	b, err := openBackend(ctx, &cfg.runConfig, name)
	if err != nil {
		code := failAdmin(ctx, err)
		stop()
		return nil, code
	}
	return &adminSession{cfg: cfg, name: name, b: b, ctx: ctx, stop: stop}, -1
}

func (a *adminSession) close() {
	a.b.close()
	a.stop()
}

// failAdmin reports a failure of inspect or clean and returns its code.
func failAdmin(sigCtx context.Context, err error) int {
	code := classify(sigCtx, err, false)
	switch {
	case code == exitUsage:
		return fail(err)
	case code == exitUnavailable:
		note("backend unreachable: %v", err)
	case code == exitNoPerm:
		note("backend refused authentication or TLS: %v", err)
	case code > exitSignalBase:
		note("interrupted by %v", syscall.Signal(code-exitSignalBase))
	default:
		note("%v", err)
	}
	return code
}

// inspectMain is `baton inspect`: the lock on stdout.
func inspectMain(args []string) int {
	a, code := openAdmin("inspect", inspectUsage, args)
	if a == nil {
		return code
	}
	defer a.close()
	return inspectLock(a, os.Stdout)
}

// inspectLock prints the lock as the engine's Inspect reads it: one table,
// or one JSON document, on every engine, with each holder's and waiter's
// host, pid and program where the engine stores them. The engine's error
// and notes may quote what a server or driver said: the backend's secrets
// are scrubbed from them.
func inspectLock(a *adminSession, w io.Writer) int {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.connectTimeout)
	in, err := a.b.client.Inspect(ctx, a.name)
	cancel()
	u, _ := splitURL(a.cfg.backend) // openAdmin parsed it
	scrub := secretScrubber(u, os.Getenv)
	if err != nil {
		return failAdmin(a.ctx, scrubbedError{msg: scrub(err.Error()), err: err})
	}
	for i, n := range in.Notes {
		in.Notes[i] = scrub(n)
	}
	if a.cfg.json {
		err = writeJSON(w, toInspectionJSON(in))
	} else {
		err = writeInspection(w, in)
	}
	if err != nil {
		note("write: %v", err)
		return exitSoftware
	}
	if in.Permits > 0 && !a.cfg.json {
		note("semaphore holders use N=%d", in.Permits)
	}
	if len(in.Holders)+len(in.Waiters)+len(in.Other) == 0 {
		note("%q has no entries on %s", a.name, a.b.engine)
	}
	return exitOK
}

// ageText rounds an age for the table; 0 is unknown.
func ageText(d time.Duration) string {
	switch {
	case d <= 0:
		return "?"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tokenText(t uint64) string {
	if t == 0 {
		return "?"
	}
	return strconv.FormatUint(t, 10)
}

// termSafe escapes what a terminal would act on rather than show, so that
// a value written by another client (an owner, a kind, an entry name)
// cannot move the cursor, retitle the window, erase the line, break the
// table's columns or reorder the text around it: C0 controls (ESC, CR, NUL,
// tab…), DEL, C1 controls, invalid UTF-8, the bidirectional overrides,
// embeddings, isolates and marks, and the line and paragraph separators.
// They are written as Go escapes (\x1b, \u202e); a backslash is doubled,
// so an escape in the output always stands for the character.
func termSafe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string) bool {
	if !utf8.ValidString(s) || strings.ContainsRune(s, '\\') {
		return true
	}
	return strings.ContainsFunc(s, unsafeRune)
}

// unsafeRune reports the characters termSafe escapes (and jsonSafe, but
// for those encoding/json already escapes).
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// writeJSON writes v as indented JSON. encoding/json escapes the C0
// controls but writes DEL, the C1 controls and the bidirectional
// characters raw: valid JSON, yet a terminal that shows it acts on them.
// They are written as \u escapes, which decode to the same strings.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonSafe(buf.Bytes()))
	return err
}

// jsonSafe rewrites the characters of unsafeRune in encoded JSON as \u
// escapes. They can only stand inside strings (JSON's own syntax is
// ASCII), where an escape means the same character.
func jsonSafe(js []byte) []byte {
	if !bytes.ContainsFunc(js, func(r rune) bool { return r >= 0x7f && unsafeRune(r) }) {
		return js
	}
	out := make([]byte, 0, len(js)+16)
	for i := 0; i < len(js); {
		r, n := utf8.DecodeRune(js[i:])
		if r >= 0x7f && unsafeRune(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, js[i:i+n]...)
		}
		i += n
	}
	return out
}
