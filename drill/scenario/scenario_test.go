package scenario

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/engine"
)

func TestScenarioNames(t *testing.T) {
	want := []string{"paused", "killed", "cut", "blackhole", "slow", "lost-release", "cancel-bulk", "herd", "waiter-expiry"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	p := RandomPrefix()
	if p == RandomPrefix() {
		t.Errorf("RandomPrefix() twice = %q: not random", p)
	}
	for _, n := range want {
		if _, err := engine.ValidateName(LockName(p, n, 12)); err != nil {
			t.Errorf("LockName(%q, %q, 12) is not a lock name: %v", p, n, err)
		}
	}
}

func validTarget() Target {
	return Target{
		Engine: "x", TTL: time.Second,
		Open:   func(context.Context, []string) (Client, error) { return nil, errors.New("no") },
		Holder: func([]string) *exec.Cmd { return nil },
		Scan:   func(context.Context, string) ([]string, error) { return nil, nil },
	}
}

func TestScenarioOptions(t *testing.T) {
	ok := Options{Trials: 1, Prefix: "p", Dir: "/tmp"}
	bad := map[string]Options{
		"no trials":        {Prefix: "p", Dir: "/tmp"},
		"no dir":           {Trials: 1, Prefix: "p"},
		"no prefix":        {Trials: 1, Dir: "/tmp"},
		"bad prefix":       {Trials: 1, Prefix: "a/../b", Dir: "/tmp"},
		"unknown scenario": {Trials: 1, Prefix: "p", Dir: "/tmp", Scenarios: []string{"paused", "nap"}},
		"negative herd":    {Trials: 1, Prefix: "p", Dir: "/tmp", Herd: -1},
	}
	for what, o := range bad {
		if _, err := o.validate(validTarget()); !errors.Is(err, ErrOptions) {
			t.Errorf("%s: validate = %v, want ErrOptions", what, err)
		}
	}
	tg := validTarget()
	tg.Scan = nil
	if _, err := ok.validate(tg); !errors.Is(err, ErrOptions) {
		t.Errorf("a target without Scan: validate = %v, want ErrOptions", err)
	}
	ok.Scenarios = []string{"herd", "paused", "herd"}
	got, err := ok.validate(validTarget())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.name)
	}
	if !slices.Equal(names, []string{"paused", "herd"}) {
		t.Errorf("selected %v, want [paused herd] (Names' order, each once)", names)
	}
	if _, err := Run(context.Background(), validTarget(), Options{}); !errors.Is(err, ErrOptions) {
		t.Errorf("Run with zero Options = %v, want ErrOptions", err)
	}
}

// history builds events at explicit times (ms).
type history struct{ es []drill.Event }

func (h *history) add(ms int64, e drill.Event) {
	e.T = ms * int64(time.Millisecond)
	h.es = append(h.es, e)
}

func (h *history) rw(client, op, res string, id int64, tok uint64, inv, done int64, phase drill.Phase) {
	h.add(inv, drill.Event{Client: client, Op: op, Name: res, ID: id, Token: tok, Phase: drill.Invoke})
	e := drill.Event{Client: client, Op: op, Name: res, ID: id, Token: tok, Phase: phase}
	if phase == drill.Fail {
		e.Detail = drill.StaleDetail
	}
	h.add(done, e)
}

// paused is the paused scenario's history: old (token 5) reads, is
// frozen, new (token 9) is granted and writes, old's decided writes come
// last: refused by the fenced counter, accepted by the unfenced one.
func paused() []drill.Event {
	var h history
	h.add(0, drill.Event{Client: "drill", Op: drill.OpSeed, Phase: drill.Info})
	h.add(1, drill.Event{Client: "old", Op: drill.OpAcquire, Name: "L", ID: 1, Phase: drill.Invoke})
	h.add(2, drill.Event{Client: "old", Op: drill.OpAcquire, Name: "L", ID: 1, Token: 5, Phase: drill.Ok})
	h.rw("old", drill.OpRead, "F", 2, 5, 3, 4, drill.Ok)
	h.rw("old", drill.OpRead, "U", 3, 5, 3, 4, drill.Ok)
	h.add(5, drill.Event{Client: "new", Op: drill.OpAcquire, Name: "L", ID: 1, Phase: drill.Invoke})
	h.add(10, drill.Event{Client: "old", Op: drill.OpFault, ID: 4, Phase: drill.Invoke, Detail: "pause: SIGSTOP"})
	h.add(2010, drill.Event{Client: "new", Op: drill.OpAcquire, Name: "L", ID: 1, Token: 9, Phase: drill.Ok})
	h.rw("new", drill.OpWrite, "F", 2, 9, 2011, 2012, drill.Ok)
	h.rw("new", drill.OpWrite, "U", 3, 9, 2011, 2012, drill.Ok)
	h.add(2020, drill.Event{Client: "old", Op: drill.OpFault, ID: 4, Phase: drill.Ok, Detail: "pause: SIGSTOP"})
	h.rw("old", drill.OpWrite, "F", 5, 5, 2021, 2022, drill.Fail)
	h.rw("old", drill.OpWrite, "U", 6, 5, 2021, 2022, drill.Ok)
	h.add(2023, drill.Event{Client: "old", Op: drill.OpState, Name: "L", Token: 5, Phase: drill.Info, Detail: "lost"})
	return h.es
}

func TestScenarioStaleWrites(t *testing.T) {
	es := sortedEvents(paused())
	if n := staleAccepted(es, "F"); n != 0 {
		t.Errorf("fenced: %d stale writes accepted, want 0 (the late write was refused)", n)
	}
	if n := staleAccepted(es, "U"); n != 1 {
		t.Errorf("unfenced: %d stale writes accepted, want 1", n)
	}
	// The same late write accepted by the fenced counter is counted.
	for i := range es {
		if es[i].Client == "old" && es[i].Name == "F" && es[i].Phase == drill.Fail {
			es[i].Phase, es[i].Detail = drill.Ok, ""
		}
	}
	if n := staleAccepted(es, "F"); n != 1 {
		t.Errorf("fenced, late write accepted: %d stale writes, want 1", n)
	}
	// A write sent before the newer grant served anything is not stale.
	var h history
	h.rw("old", drill.OpWrite, "U", 1, 5, 0, 3, drill.Ok)
	h.rw("new", drill.OpRead, "U", 1, 9, 1, 2, drill.Ok)
	if n := staleAccepted(h.es, "U"); n != 0 {
		t.Errorf("a write sent before the newer read completed: %d stale, want 0", n)
	}
}

func TestScenarioTimeline(t *testing.T) {
	es := sortedEvents(paused())
	fault, ok := firstFault(es)
	if !ok || fault.Client != "old" {
		t.Fatalf("firstFault = %+v, %v", fault, ok)
	}
	g, ok := nextGrant(es, "L", fault)
	if !ok || g.Client != "new" || time.Duration(g.At-fault.T) != 2000*time.Millisecond {
		t.Errorf("nextGrant = %+v, %v; want new's, 2s after the fault", g, ok)
	}
	tr := &trial{t: Target{TTL: 2 * time.Second}}
	if lead, ok := tr.lostLead(es, fault); !ok || lead != -13*time.Millisecond {
		// fault at 10ms + TTL 2s = 2010ms; told Lost at 2023ms.
		t.Errorf("lostLead = %v, %v; want -13ms (told after the expiry bound)", lead, ok)
	}
	tl := timeline(es, 3, 7, "F", "U")
	if tl.Trial != 3 || tl.Seed != 7 {
		t.Errorf("timeline trial, seed = %d, %d", tl.Trial, tl.Seed)
	}
	kinds := map[string]int{}
	for _, s := range tl.Spans {
		kinds[s.Client+" "+s.Kind]++
		if s.To < s.From {
			t.Errorf("span %+v ends before it starts", s)
		}
	}
	for _, want := range []string{"old waited", "old held", "new waited", "new held"} {
		if kinds[want] != 1 {
			t.Errorf("timeline spans %v: want one %q", tl.Spans, want)
		}
	}
	var marks []string
	for _, m := range tl.Marks {
		marks = append(marks, m.Client+" "+m.Kind)
	}
	want := []string{"old pause", "new write-ok", "new write-ok", "old resume", "old write-refused", "old stale-accepted", "old lost"}
	if !slices.Equal(marks, want) {
		t.Errorf("timeline marks %v, want %v", marks, want)
	}
}
