package scenario

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/baton-go/baton/engine"
)

// ErrOptions is wrapped by Run's errors about its Options or Target (an
// unknown scenario, no trials, a bad prefix): the caller's mistake, not
// the deployment's (the CLI exits 64 on it).
var ErrOptions = errors.New("scenario: invalid options")

// DefaultHerd is the number of waiters of the herd and cancel-bulk
// scenarios when Options.Herd is 0: enough that a release waking the
// whole queue shows, few enough for two cores under -race.
const DefaultHerd = 20

// spec is one scenario: its name, whether it applies to a Target, and
// what it measures besides the common figures.
type spec struct {
	name string
	run  func(tr *trial) error
	// skip says why the scenario does not apply to t ("" when it does).
	skip func(t Target) string
	// control: the fault leaves a holder with a decided write after a
	// newer grant, so the unfenced twin must accept a stale write; if it
	// does not, the drill did not exercise the fault and the trial fails.
	control bool
	// lead: the holder keeps running through the fault, so how long
	// before the server-side expiry it was told Lost is measured.
	lead bool
}

// specs lists the scenarios in the stable order of Names.
var specs = []spec{
	{name: "paused", run: runPaused, control: true},
	{name: "killed", run: runKilled},
	{name: "cut", run: runCut, skip: needsAddrs, control: true, lead: true},
	{name: "blackhole", run: runBlackhole, skip: needsAddrs, control: true, lead: true},
	{name: "slow", run: runSlow, skip: needsAddrs, control: true, lead: true},
	{name: "lost-release", run: runLostRelease, skip: needsAddrs},
	{name: "cancel-bulk", run: runCancelBulk},
	{name: "herd", run: runHerd},
	{name: "waiter-expiry", run: runWaiterExpiry, skip: waiterExpirySkip},
}

// Names returns every scenario's name, in the order Run runs them.
func Names() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

func lookup(name string) (spec, bool) {
	for _, s := range specs {
		if s.name == name {
			return s, true
		}
	}
	return spec{}, false
}

func needsAddrs(t Target) string {
	if len(t.Addrs) == 0 {
		return t.Engine + " is embedded in the process: there is no transport to fault"
	}
	return ""
}

// waiterExpirySkip: a lease engine's waiter holds nothing on the server —
// no session, no queue entry — while it waits; it only retries. There is
// nothing of it that could expire, so the scenario has no fault to inject.
func waiterExpirySkip(t Target) string {
	if t.Family == Lease {
		return "a waiter of a lease engine holds no session or entry on the server while it waits: nothing of it can expire"
	}
	return needsAddrs(t)
}

// LockName is the lock name of trial of scenario: every name of a drill
// is under prefix, one name per trial, none the parent of another.
func LockName(prefix, scenario string, trial int) string {
	return prefix + "/" + scenario + "/" + strconv.Itoa(trial)
}

// RandomPrefix returns a fresh prefix, "baton-drill/<random hex>", so
// that a drill's names can never be a user's.
func RandomPrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	return "baton-drill/" + hex.EncodeToString(b)
}

// validate checks o against t and returns the scenarios to run.
func (o Options) validate(t Target) ([]spec, error) {
	bad := func(format string, args ...any) ([]spec, error) {
		return nil, fmt.Errorf("%w: %s", ErrOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Trials < 1:
		return bad("trials %d, want ≥ 1", o.Trials)
	case o.Dir == "":
		return bad("no directory for histories")
	case o.Herd < 0:
		return bad("herd %d, want ≥ 0", o.Herd)
	case t.Open == nil || t.Holder == nil || t.Scan == nil:
		return bad("target %q lacks Open, Holder or Scan", t.Engine)
	case t.TTL < 100*time.Millisecond:
		return bad("TTL %v, want ≥ 100ms", t.TTL)
	}
	if _, err := engine.ValidateName(LockName(o.Prefix, "x", 0)); err != nil || o.Prefix == "" {
		return bad("prefix %q: not a lock name prefix (%v)", o.Prefix, err)
	}
	if o.Scenarios == nil {
		return slices.Clone(specs), nil
	}
	for _, n := range o.Scenarios {
		if _, ok := lookup(n); !ok {
			return bad("unknown scenario %q (known: %v)", n, Names())
		}
	}
	var out []spec // in Names' order, each once
	for _, s := range specs {
		if slices.Contains(o.Scenarios, s.name) {
			out = append(out, s)
		}
	}
	return out, nil
}
