package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine/queuekit"
)

// Clean is `baton clean`: residue removal (dry run unless --apply), or
// the forced release of one exact entry.
func Clean(env *cli.Env, args []string) int {
	a, code := openAdmin(env, "clean", CleanUsage, args)
	if a == nil {
		return code
	}
	defer a.close()
	qa, ok := a.b.Queue()
	if !ok { // an engine whose locks are no queues, and no power says so offline
		return env.Fail(cli.Usagef("clean: not applicable to the %s engine: it keeps no queue of entries to clean", a.b.Engine))
	}
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.ConnectTimeout)
	q, err := qa.Inspect(ctx, a.name)
	cancel()
	if err != nil {
		return a.env.FailConnected(a.ctx, err)
	}
	if a.cfg.forceSet {
		return forceRelease(a, qa, q, env.Stdout)
	}
	return cleanResidue(a, qa, q, env.Stdout)
}

// refuseDirectory rejects a --force-release that names the lock directory
// (or a semaphore's queue directory) instead of an entry. Removing the
// directory would release the real holder and every waiter at once and
// destroy the evidence an operator needs to find out why it was stuck.
// The engines' Remove refuses anything but an entry, too; this check only
// gives the reason.
func refuseDirectory(name, entry string) error {
	e := strings.Trim(entry, "/")
	if e == "" || e == "." || e == "locks" || e == "leases" || e == name || strings.HasSuffix(e, "/"+name) {
		return cli.Usagef("clean: --force-release %q names the lock directory, not an entry: baton never removes the directory "+
			"(it would free the holder and every waiter at once and destroy the evidence); name one entry as baton inspect prints it", entry)
	}
	return nil
}

// residueReason says why clean may remove e, or "" when it may not.
// Only two kinds of entry are provably residue: a protected-create
// duplicate (the engine flags only one of the same session as its
// smallest sibling), and an entry no live session owns. A foreign key is
// never residue, whatever else is flagged: it is not baton's (on etcd, a
// user's key under the lock's prefix).
func residueReason(e queuekit.EntryInfo) string {
	switch {
	case e.Foreign:
		return ""
	case e.DeadSession:
		return "no live session owns it"
	case e.Duplicate:
		return "protected-create duplicate of the same session"
	}
	return ""
}

// cleanResidue lists, and with --apply removes through qa, the entries
// of q that residueReason accepts.
func cleanResidue(a *adminSession, qa backend.QueueAdmin, q []queuekit.EntryInfo, w io.Writer) int {
	verb := "would remove"
	if a.cfg.apply {
		verb = "removing"
	}
	found, failed := 0, 0
	for _, e := range q {
		why := residueReason(e)
		if why == "" {
			continue
		}
		found++
		fmt.Fprintf(w, "%s %s (%s, session %s): %s\n", verb, e.Entry, kindName(e.Kind), orDash(e.Session), why)
		if !a.cfg.apply {
			continue
		}
		ctx, cancel := context.WithTimeout(a.ctx, a.cfg.ConnectTimeout)
		err := qa.Remove(ctx, a.name, e.Entry)
		cancel()
		if err != nil {
			failed++
			a.env.Note("remove %s: %v", e.Entry, err)
			continue
		}
		fmt.Fprintf(w, "removed %s\n", e.Entry)
	}
	kept := len(q) - found
	switch {
	case found == 0:
		fmt.Fprintf(w, "nothing to clean in %q: %d entries, none a duplicate, none known to lack a live session\n", a.name, kept)
	case !a.cfg.apply:
		fmt.Fprintf(w, "dry run: nothing removed; %d entries kept; re-run with --apply to remove %d\n", kept, found)
	default:
		fmt.Fprintf(w, "removed %d of %d; %d entries kept\n", found-failed, found, kept)
	}
	if failed > 0 {
		return cli.ExitUnavailable
	}
	return cli.ExitOK
}

// evidence is what --force-release saves before it removes anything.
type evidence struct {
	Time       time.Time   `json:"time"`
	Engine     string      `json:"engine"`
	Backend    string      `json:"backend"` // credentials redacted
	Lock       string      `json:"lock"`
	Entry      entryJSON   `json:"entry"`
	FenceToken *uint64     `json:"fence_token"` // raise the fence to this
	FenceExact bool        `json:"fence_token_exact"`
	Queue      []entryJSON `json:"queue"` // the whole queue at the time
}

// forceRelease releases one exact live entry: it prints the evidence and
// the fence to raise; with --apply it saves the evidence, then removes.
func forceRelease(a *adminSession, qa backend.QueueAdmin, q []queuekit.EntryInfo, w io.Writer) int {
	var target *queuekit.EntryInfo
	for i := range q {
		if q[i].Entry == a.cfg.forceRelease {
			target = &q[i]
		}
	}
	if target == nil {
		a.env.Note("clean: --force-release %q: no such entry in %q (it may be gone already; run baton inspect %s for the exact names)",
			a.cfg.forceRelease, a.name, a.name)
		return cli.ExitNoEntry
	}
	ev := evidence{
		Time:    time.Now().UTC(),
		Engine:  a.b.Engine,
		Backend: a.cfg.URL.Redacted,
		Lock:    a.name,
		Entry:   entryToJSON(*target),
		Queue:   toJSON(q),
	}
	fence, exact := target.Token, target.Token != 0
	if bounder, ok := qa.(queuekit.TokenBounder); ok && !exact {
		ctx, cancel := context.WithTimeout(a.ctx, a.cfg.ConnectTimeout)
		b, err := bounder.TokenBound(ctx, a.name)
		cancel()
		if err != nil {
			return a.env.FailConnected(a.ctx, err)
		}
		fence = b
	}
	if fence != 0 {
		ev.FenceToken, ev.FenceExact = &fence, exact
	}

	e := target
	fmt.Fprintf(w, "force-release of %s in %q (%s):\n", e.Entry, a.name, a.b.Engine)
	fmt.Fprintf(w, "  kind %s, %s, owner session %s, token %s, age %s\n",
		kindName(e.Kind), stateName(*e), orDash(e.Session), tokenText(e.Token), ageText(e.Age))
	if p := e.Process; p.Host != "" || p.PID != 0 {
		fmt.Fprintf(w, "  created by host %s, pid %s, program %s\n", cli.TermSafe(orDash(p.Host)), pidText(p.PID),
			cli.TermSafe(orDash(programText(p))))
	}
	if e.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", e.Note)
	}
	if !e.DeadSession {
		fmt.Fprintf(w, "  its session is alive and will not be told: it keeps working until its resource rejects it\n")
	}
	switch {
	case exact:
		fmt.Fprintf(w, "FIRST raise the fence of every resource %q guards to token %d under an owner name of your own:\n", a.name, fence)
	case fence != 0:
		fmt.Fprintf(w, "FIRST raise the fence of every resource %q guards to token %d (no grant so far has a larger one) under an owner name of your own:\n", a.name, fence)
	default:
		fmt.Fprintf(w, "FIRST raise the fence of every resource %q guards above this holder's token (unknown here):\n", a.name)
	}
	fmt.Fprintf(w, "  the (token, owner) rule then rejects this holder's writes and admits the next holder, whose token is larger.\n")
	if !a.cfg.apply {
		fmt.Fprintf(w, "dry run: nothing removed, no evidence saved; re-run with --apply once the fence is raised\n")
		return cli.ExitOK
	}
	path, err := saveEvidence(a.env, a.cfg.evidenceDir, a.name, ev)
	if err != nil {
		a.env.Note("clean: evidence not saved, nothing removed: %v", err)
		return cli.ExitCantCreate
	}
	fmt.Fprintf(w, "evidence saved to %s\n", path)
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.ConnectTimeout)
	defer cancel()
	if err := qa.Remove(ctx, a.name, e.Entry); err != nil {
		return a.env.FailConnected(a.ctx, err)
	}
	fmt.Fprintf(w, "removed %s\n", e.Entry)
	return cli.ExitOK
}

// evidenceDir is where evidence goes without --evidence-dir: the user's
// state directory (XDG), beside baton's embedded default backend.
func evidenceDir(env *cli.Env, flagDir string) (string, error) {
	if flagDir != "" {
		return flagDir, nil
	}
	d, err := backend.StateDir(env.Getenv)
	if err != nil {
		return "", fmt.Errorf("no --evidence-dir, and %w", err)
	}
	return d, nil
}

// saveEvidence writes ev to a new file (never overwriting one) and returns
// its path.
func saveEvidence(env *cli.Env, flagDir, name string, ev evidence) (string, error) {
	dir, err := evidenceDir(env, flagDir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r < ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, name)
	if len(safe) > 100 {
		safe = safe[:100]
	}
	path := filepath.Join(dir, fmt.Sprintf("baton-evidence-%s-%s.json", safe, ev.Time.Format("20060102T150405.000000000Z")))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if err := cli.WriteJSON(f, ev); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", errors.Join(err, os.Remove(path))
	}
	return path, nil
}

// entryJSON is one queue entry in clean's evidence, as the engine lists
// it: the exact entry name --force-release takes, its session, and the
// holder record (host, pid, program) where its creator stored one.
// Unknown token and age are null.
type entryJSON struct {
	Position    int               `json:"position"`
	Entry       string            `json:"entry"`
	Kind        string            `json:"kind"`
	Marker      string            `json:"marker"`
	Session     string            `json:"session"`
	Host        string            `json:"host,omitempty"`
	PID         int               `json:"pid,omitempty"`
	Program     string            `json:"program,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Token       *uint64           `json:"token"`
	AgeMS       *int64            `json:"age_ms"`
	State       string            `json:"state"`
	Holder      bool              `json:"holder"`
	Duplicate   bool              `json:"duplicate"`
	DeadSession bool              `json:"dead_session"`
	Foreign     bool              `json:"foreign,omitempty"` // not baton's: never ordered, never removed
	Note        string            `json:"note,omitempty"`
}

func entryToJSON(e queuekit.EntryInfo) entryJSON {
	return entryJSON{
		Position: e.Position, Entry: e.Entry, Kind: kindName(e.Kind), Marker: string(e.Kind),
		Session: e.Session, Host: e.Process.Host, PID: e.Process.PID, Program: e.Process.Program, Labels: e.Process.Labels,
		Token: nonZero(e.Token), AgeMS: optMillis(e.Age), State: stateName(e), Holder: e.Holder,
		Duplicate: e.Duplicate, DeadSession: e.DeadSession, Foreign: e.Foreign, Note: e.Note,
	}
}

func toJSON(q []queuekit.EntryInfo) []entryJSON {
	out := make([]entryJSON, 0, len(q))
	for _, e := range q {
		out = append(out, entryToJSON(e))
	}
	return out
}

// kindName is the word clean shows for an entry's recipe.
func kindName(k queuekit.Kind) string {
	switch k {
	case queuekit.KindMutex:
		return "mutex"
	case queuekit.KindRead:
		return "read"
	case queuekit.KindWrite:
		return "write"
	case queuekit.KindLatch:
		return "leader"
	case queuekit.KindLease:
		return "lease"
	}
	return string(k)
}

func stateName(e queuekit.EntryInfo) string {
	if e.Holder {
		return "holder"
	}
	return "waiting"
}
