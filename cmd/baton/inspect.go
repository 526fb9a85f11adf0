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
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/queue"
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
	name, err := baton.ValidateName(cfg.name)
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

// inspect reads the queue of a queue engine, bounded by --connect-timeout.
func (a *adminSession) inspect() ([]queue.EntryInfo, error) {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.connectTimeout)
	defer cancel()
	return a.b.queue.Inspect(ctx, a.name)
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

// inspectMain is `baton inspect`: the queue on stdout.
func inspectMain(args []string) int {
	a, code := openAdmin("inspect", inspectUsage, args)
	if a == nil {
		return code
	}
	defer a.close()
	return a.b.inspect(a, os.Stdout)
}

// inspectQueue is inspect on a queue engine (ZooKeeper, etcd): every entry
// in the order it is served, holders first.
func inspectQueue(a *adminSession, w io.Writer) int {
	q, err := a.inspect()
	if err != nil {
		return failAdmin(a.ctx, err)
	}
	if a.cfg.json {
		err = writeJSON(w, toJSON(q))
	} else {
		err = writeTable(w, q)
	}
	if err != nil {
		note("write: %v", err)
		return exitSoftware
	}
	if len(q) == 0 {
		note("%q has no entries on %s", a.name, a.b.engine)
	}
	return exitOK
}

// kindName is the word `inspect` shows for an entry's recipe.
func kindName(k queue.Kind) string {
	switch k {
	case queue.KindMutex:
		return "mutex"
	case queue.KindRead:
		return "read"
	case queue.KindWrite:
		return "write"
	case queue.KindLatch:
		return "leader"
	case queue.KindLease:
		return "lease"
	}
	return string(k)
}

func stateName(e queue.EntryInfo) string {
	if e.Holder {
		return "holder"
	}
	return "waiting"
}

func flagsOf(e queue.EntryInfo) string {
	switch {
	case e.Foreign:
		return "foreign"
	case e.Duplicate && e.DeadSession:
		return "duplicate,dead"
	case e.Duplicate:
		return "duplicate"
	case e.DeadSession:
		return "dead"
	}
	return "-"
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

// writeTable prints the queue as aligned columns. Entries, kinds,
// sessions and notes come from the backend, written by any client: they
// are shown through termSafe.
func writeTable(w io.Writer, q []queue.EntryInfo) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tENTRY\tKIND\tSESSION\tTOKEN\tAGE\tSTATE\tFLAGS\tNOTE")
	for _, e := range q {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Position, termSafe(e.Entry), termSafe(kindName(e.Kind)),
			termSafe(orDash(e.Session)), tokenText(e.Token), ageText(e.Age), stateName(e), flagsOf(e), termSafe(e.Note))
	}
	return tw.Flush()
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

// entryJSON is one entry in `inspect --json` and in clean's evidence.
// Unknown token and age are null.
type entryJSON struct {
	Position    int     `json:"position"`
	Entry       string  `json:"entry"`
	Kind        string  `json:"kind"`
	Marker      string  `json:"marker"`
	Session     string  `json:"session"`
	Token       *uint64 `json:"token"`
	AgeMS       *int64  `json:"age_ms"`
	State       string  `json:"state"`
	Holder      bool    `json:"holder"`
	Duplicate   bool    `json:"duplicate"`
	DeadSession bool    `json:"dead_session"`
	Foreign     bool    `json:"foreign,omitempty"` // not baton's: never ordered, never removed
	Note        string  `json:"note,omitempty"`
	// SQL engine only: the lease deadline on the database clock, and the
	// time left before it as the database saw it (negative: expired).
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	LeaseLeftMS *int64     `json:"lease_left_ms,omitempty"`
}

func entryToJSON(e queue.EntryInfo) entryJSON {
	j := entryJSON{
		Position: e.Position, Entry: e.Entry, Kind: kindName(e.Kind), Marker: string(e.Kind),
		Session: e.Session, State: stateName(e), Holder: e.Holder,
		Duplicate: e.Duplicate, DeadSession: e.DeadSession, Foreign: e.Foreign, Note: e.Note,
	}
	if e.Token != 0 {
		t := e.Token
		j.Token = &t
	}
	if e.Age > 0 {
		ms := e.Age.Milliseconds()
		j.AgeMS = &ms
	}
	return j
}

func toJSON(q []queue.EntryInfo) []entryJSON {
	out := make([]entryJSON, 0, len(q))
	for _, e := range q {
		out = append(out, entryToJSON(e))
	}
	return out
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
