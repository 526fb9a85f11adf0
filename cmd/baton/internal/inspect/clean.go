package inspect

import (
	"context"
	"fmt"
	"io"
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
	fence, exact, err := fenceOf(a, qa, target)
	if err != nil {
		return a.env.FailConnected(a.ctx, err)
	}
	ev := evidence{
		Time:    time.Now().UTC(),
		Engine:  a.b.Engine,
		Backend: a.cfg.URL.Redacted,
		Lock:    a.name,
		Entry:   entryToJSON(*target),
		Queue:   toJSON(q),
	}
	if fence != 0 {
		ev.FenceToken, ev.FenceExact = &fence, exact
	}
	e := target
	tellForceRelease(w, a, e, fence, exact)
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

// fenceOf is the token to raise the fences of NAME's resources to before
// e is removed: e's own (exact), else the engine's bound where it has one
// (no grant so far has a larger token), else 0 (unknown).
func fenceOf(a *adminSession, qa backend.QueueAdmin, e *queuekit.EntryInfo) (fence uint64, exact bool, err error) {
	if e.Token != 0 {
		return e.Token, true, nil
	}
	bounder, ok := qa.(queuekit.TokenBounder)
	if !ok {
		return 0, false, nil
	}
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.ConnectTimeout)
	defer cancel()
	fence, err = bounder.TokenBound(ctx, a.name)
	return fence, false, err
}

// tellForceRelease prints the evidence of e and the fence to raise.
func tellForceRelease(w io.Writer, a *adminSession, e *queuekit.EntryInfo, fence uint64, exact bool) {
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
}
