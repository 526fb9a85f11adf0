package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/redlock"
)

func init() {
	register(&engine{
		schemes: []string{"redlock"},
		parse:   func(u engineURL) error { return baton.CheckURL(u.orig) },
		open:    openRedlock,
		checkHold: func(cmd string, _ engineURL, cfg *runConfig) error {
			if err := redlockOnlyMutex(cmd, cfg.mode); err != nil {
				return err
			}
			return checkRedisTTL(cmd, "Redlock", cfg.ttl)
		},
		noClean: func(engineURL) error { return redlockNoClean() },
	})
}

// redlockOnlyMutex is the usage error of a recipe Redlock does not have.
// It is checked offline (parseHold), before anything connects.
func redlockOnlyMutex(cmd string, mode lockMode) error {
	what := ""
	switch {
	case cmd == "elect":
		what = "elections"
	case mode == modeRead || mode == modeWrite:
		what = "read/write locks (--read, --write)"
	case mode == modeShared:
		what = "semaphores (--shared)"
	default:
		return nil
	}
	return usagef("%s: Redlock has only the mutex: no %s. The quorum fencing token proves the order of one holder "+
		"after another, not of several at once; use a redis:// primary, etcd, ZooKeeper or SQL for them", cmd, what)
}

// redlockNoClean is the usage error of `baton clean` on Redlock.
func redlockNoClean() error {
	return usagef("clean: not applicable to the Redlock engine: every lock key expires by itself on every node " +
		"(a dead holder's within --ttl); run baton inspect to see each node's holder, tokens and time left")
}

// redlockErr classifies a Redlock failure as redisErr does a Redis one:
// the nodes are Redis servers, and a refusal by any of them, among the
// others' errors, is the cause to report (exit 77).
func redlockErr(err error) error { return redisErr(err) }

// openRedlock connects to a Redlock deployment through package redlock,
// which reads the nodes' indexes until a majority answered, retried until
// --connect-timeout: a connect check that writes nothing, so inspect and
// the exporter stay read-only (the first acquire sets missing indexes).
func openRedlock(ctx context.Context, cfg *runConfig, u engineURL, _ string) (*backend, error) {
	if err := redlockOnlyMutex("run", cfg.mode); err != nil {
		return nil, err
	}
	// Scrub the password whether it came from the URL or the environment.
	su := u
	if !u.hasUser {
		su.password = os.Getenv("BATON_REDIS_PASSWORD")
	}
	bc, err := baton.Open(ctx, u.orig, redisOptions(cfg, u)...)
	if err != nil {
		return nil, su.scrub(err)
	}
	c, _ := baton.As[*redlock.Client](bc)
	read := func(ctx context.Context, name string) ([]redlock.NodeEntry, error) {
		es, err := c.Inspect(ctx, name)
		if err != nil {
			return nil, su.scrub(err)
		}
		for i := range es {
			es[i].Err = su.scrub(es[i].Err)
		}
		return es, nil
	}
	return &backend{
		engine: "redlock",
		locker: func(name string, mode lockMode, _ int) (baton.Locker, error) {
			if err := redlockOnlyMutex("run", mode); err != nil {
				return nil, err
			}
			return c.Mutex(name)
		},
		election: func(string) (baton.Elector, error) { return nil, redlockOnlyMutex("elect", modeMutex) },
		inspect:  func(a *adminSession, w io.Writer) int { return inspectRedlock(a, w, read) },
		view:     redlockView(read),
		close:    func() { _ = bc.Close() },
	}, nil
}

// redlockEntryJSON is one node in `inspect --json` on Redlock.
type redlockEntryJSON struct {
	Node    int    `json:"node"`
	Addr    string `json:"addr"`
	Entry   string `json:"entry"`   // node<i>/<owner>, "" when free
	Session string `json:"session"` // the holding grant's owner
	State   string `json:"state"`   // holder, free or unreachable
	Holder  bool   `json:"holder"`
	// Token is the grant's quorum token (BATON_TOKEN), written back on the
	// majority that granted first; null on a node that granted later.
	Token     *uint64 `json:"token"`
	NodeToken *uint64 `json:"node_token"` // the value this node minted for the grant
	// LeaseLeftMS is the key's time left on the node's clock.
	LeaseLeftMS *int64 `json:"lease_left_ms"`
	Counter     uint64 `json:"counter"` // the node's token counter
	Index       string `json:"index"`   // the node's stored index ("" when never set)
	Error       string `json:"error,omitempty"`
}

// inspectRedlock is inspect on the Redlock engine: one row per node with
// what it holds for NAME (owner, the node's own token and the grant's
// quorum token, time left on the node's clock) and the node's counter and
// index. It needs a majority of the nodes to answer.
func inspectRedlock(a *adminSession, w io.Writer, read func(context.Context, string) ([]redlock.NodeEntry, error)) int {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.connectTimeout)
	defer cancel()
	es, err := read(ctx, a.name)
	if err != nil {
		return failAdmin(a.ctx, redlockErr(err))
	}
	var errs []error
	holders := map[string]int{}
	out := make([]redlockEntryJSON, 0, len(es))
	for _, e := range es {
		j := redlockEntryJSON{Node: e.Node, Addr: e.Addr, State: "free", Counter: e.Counter, Index: e.Index}
		switch {
		case e.Err != nil:
			j.State, j.Error = "unreachable", e.Err.Error()
			errs = append(errs, e.Err)
		case e.Owner != "":
			j.State, j.Holder, j.Session, j.Entry = "holder", true, e.Owner, fmt.Sprintf("node%d/%s", e.Node, e.Owner)
			nt, left := e.Token, e.TTLLeft.Milliseconds()
			j.NodeToken, j.LeaseLeftMS = &nt, &left
			if e.Grant != 0 {
				g := e.Grant
				j.Token = &g
			}
			holders[e.Owner]++
		}
		out = append(out, j)
	}
	majority := len(es)/2 + 1
	if len(es)-len(errs) < majority {
		return failAdmin(a.ctx, redlockErr(fmt.Errorf("%w: %d of %d Redlock nodes answered, want ≥ %d: %w",
			baton.ErrUnavailable, len(es)-len(errs), len(es), majority, errors.Join(errs...))))
	}
	if a.cfg.json {
		err = writeJSON(w, out)
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tADDR\tSTATE\tOWNER\tTOKEN\tNODE TOKEN\tLEFT\tCOUNTER")
		for i, j := range out {
			left, nodeTok, tok := "-", "-", "-"
			if j.Holder {
				left = es[i].TTLLeft.Round(time.Millisecond).String()
				nodeTok, tok = tokenText(es[i].Token), tokenText(es[i].Grant)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", j.Node, j.Addr, j.State, termSafe(orDash(j.Session)), tok, nodeTok, left, j.Counter)
		}
		err = tw.Flush()
	}
	if err != nil {
		note("write: %v", err)
		return exitSoftware
	}
	for _, e := range errs {
		note("%v", e)
	}
	switch {
	case len(holders) == 0:
		note("%q is free on every node that answered", a.name)
	default:
		for _, owner := range slices.Sorted(maps.Keys(holders)) {
			n := holders[owner]
			if n >= majority {
				note("%q is held by %s on %d of %d nodes (a majority)", a.name, owner, n, len(es))
			} else {
				note("%s holds %q on %d of %d nodes, below the majority of %d: an attempt that failed or a lock expiring", owner, a.name, n, len(es), majority)
			}
		}
	}
	return exitOK
}
