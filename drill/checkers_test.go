package drill_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-go/baton/drill"
)

// hist builds synthetic histories with explicit times (ms).
type hist struct {
	rec *drill.Recorder
	ids map[string]int64
}

func newHist() *hist { return &hist{rec: drill.NewRecorder(nil), ids: map[string]int64{}} }

// ms is n milliseconds after an origin of 1 s (Record stamps a zero T).
func ms(n int) int64 { return int64(time.Second) + int64(n)*int64(time.Millisecond) }

func (h *hist) op(client, op, name string, tok uint64, owner string, in *int64, call int, phase drill.Phase, out *int64, ret int, detail string) {
	h.ids[client]++
	id := h.ids[client]
	h.rec.Record(drill.Event{Client: client, Op: op, Phase: drill.Invoke, Name: name, Token: tok, Entry: owner, Value: in, T: ms(call), ID: id})
	if phase == "" {
		return
	}
	h.rec.Record(drill.Event{Client: client, Op: op, Phase: phase, Name: name, Token: tok, Entry: owner, Value: out, T: ms(ret), ID: id, Detail: detail})
}

func (h *hist) acquire(client, name string, tok, order uint64, at int) {
	h.rec.Record(drill.Event{Client: client, Op: drill.OpAcquire, Phase: drill.Ok, Name: name, Token: tok, Order: order, T: ms(at)})
}

func (h *hist) release(client, name string, tok uint64, at int) {
	h.rec.Record(drill.Event{Client: client, Op: drill.OpRelease, Phase: drill.Invoke, Name: name, Token: tok, T: ms(at)})
}

func (h *hist) state(client, name string, tok uint64, detail string, at int) {
	h.rec.Record(drill.Event{Client: client, Op: drill.OpState, Phase: drill.Info, Name: name, Token: tok, Detail: detail, T: ms(at)})
}

// staleHistory is the Jepsen pause: A (token 1) reads 0, pauses; B (token
// 2) reads 0 and writes 1; A resumes and writes 1. fencedAnswer is what
// the resource told A.
func staleHistory(aWrite drill.Phase, detail string) *hist {
	h := newHist()
	v := drill.Int
	h.op("a", drill.OpRead, "r", 1, "A", nil, 0, drill.Ok, v(0), 1, "")
	h.op("b", drill.OpRead, "r", 2, "B", nil, 10, drill.Ok, v(0), 11, "")
	h.op("b", drill.OpWrite, "r", 2, "B", v(1), 12, drill.Ok, nil, 13, "")
	h.op("a", drill.OpWrite, "r", 1, "A", v(1), 20, aWrite, nil, 21, detail)
	return h
}

func TestCheckRegister(t *testing.T) {
	for _, tc := range []struct {
		name  string
		h     *hist
		final int64
		lin   bool
		lost  int
	}{
		{"stale write rejected", staleHistory(drill.Fail, drill.StaleDetail), 1, true, 0},
		{"stale write accepted (unfenced)", staleHistory(drill.Ok, ""), 1, false, 1},
		{"stale write unknown", staleHistory(drill.Unknown, ""), 1, false, 0},
		{"stale write pending", staleHistory("", ""), 1, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := drill.CheckRegister(tc.h.rec.Events(), "r", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			// An unknown or pending stale write may have been rejected, so it
			// cannot make the history illegal: only an acknowledged one can.
			want := tc.lin || tc.name != "stale write accepted (unfenced)"
			if res.Linearizable() != want {
				t.Errorf("CheckRegister = %s, want linearizable %v", res.Result, want)
			}
			if !res.Linearizable() {
				p := filepath.Join(t.TempDir(), "v.html")
				if err := res.Visualize(p); err != nil {
					t.Errorf("Visualize = %v", err)
				}
			}
			rep := drill.CheckCounter(tc.h.rec.Events(), "r", 0, tc.final)
			if rep.Lost != tc.lost {
				t.Errorf("CheckCounter = %v, want %d lost", rep, tc.lost)
			}
		})
	}
}

func TestCheckRegisterRejectsWrongRead(t *testing.T) {
	h := newHist()
	v := drill.Int
	h.op("a", drill.OpWrite, "r", 1, "A", v(5), 0, drill.Ok, nil, 1, "")
	h.op("b", drill.OpRead, "r", 2, "B", nil, 2, drill.Ok, v(4), 3, "")
	res, err := drill.CheckRegister(h.rec.Events(), "r", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Linearizable() {
		t.Error("a read of 4 after an acknowledged write of 5 was accepted as linearizable")
	}
	// A stale rejection of an admissible token is also illegal.
	h = newHist()
	h.op("a", drill.OpWrite, "r", 3, "A", v(5), 0, drill.Fail, nil, 1, drill.StaleDetail)
	if res, _ := drill.CheckRegister(h.rec.Events(), "r", 10*time.Second); res.Linearizable() {
		t.Error("a fresh token rejected as stale was accepted as linearizable")
	}
	if _, err := drill.CheckRegister(nil, "r", 0); err == nil {
		t.Error("CheckRegister(empty) = nil error, want one: an empty check proves nothing")
	}
}

func TestCheckCounterInterleaving(t *testing.T) {
	h := newHist()
	v := drill.Int
	h.op("a", drill.OpRead, "r", 1, "A", nil, 0, drill.Ok, v(0), 1, "")
	h.op("b", drill.OpRead, "r", 2, "B", nil, 2, drill.Ok, v(0), 3, "")
	h.op("a", drill.OpWrite, "r", 1, "A", v(1), 4, drill.Ok, nil, 5, "")
	h.op("b", drill.OpWrite, "r", 2, "B", v(1), 6, drill.Ok, nil, 7, "")
	rep := drill.CheckCounter(h.rec.Events(), "r", 0, 1)
	if rep.OK() || len(rep.Interleaved) != 1 || rep.Lost != 1 {
		t.Errorf("CheckCounter = %v, want 1 interleaved pair and 1 lost", rep)
	}
	h = newHist()
	h.op("a", drill.OpRead, "r", 1, "A", nil, 0, drill.Ok, v(0), 1, "")
	h.op("a", drill.OpWrite, "r", 1, "A", v(1), 2, drill.Ok, nil, 3, "")
	h.op("b", drill.OpRead, "r", 2, "B", nil, 4, drill.Ok, v(1), 5, "")
	h.op("b", drill.OpWrite, "r", 2, "B", v(2), 6, drill.Ok, nil, 7, "")
	if rep := drill.CheckCounter(h.rec.Events(), "r", 0, 2); !rep.OK() || rep.Accepted != 2 {
		t.Errorf("CheckCounter(serial) = %v, want 2 accepted, OK", rep)
	}
}

func TestIntervalCheckers(t *testing.T) {
	good := newHist()
	good.acquire("a", "L", 10, 1, 0)
	good.release("a", "L", 10, 5)
	good.acquire("b", "L", 12, 2, 6)
	good.release("b", "L", 12, 8)
	good.acquire("c", "L", 15, 3, 9)
	es := good.rec.Events()
	for name, vs := range map[string][]drill.Violation{
		"CheckTokens":    drill.CheckTokens(es),
		"CheckExclusive": drill.CheckExclusive(es),
		"CheckFIFO":      drill.CheckFIFO(es),
		"CheckProgress":  drill.CheckProgress(es, "L", "a", ms(1), 10*time.Millisecond),
	} {
		if len(vs) != 0 {
			t.Errorf("%s(good) = %v, want none", name, vs)
		}
	}

	bad := newHist()
	bad.acquire("a", "L", 10, 2, 0)
	bad.acquire("b", "L", 10, 1, 6) // same token, earlier queue order, a never released nor told
	es = bad.rec.Events()
	if vs := drill.CheckTokens(es); len(vs) != 1 {
		t.Errorf("CheckTokens(reused token) = %v, want 1 violation", vs)
	}
	if vs := drill.CheckExclusive(es); len(vs) != 1 {
		t.Errorf("CheckExclusive(overlap) = %v, want 1 violation", vs)
	}
	if vs := drill.CheckFIFO(es); len(vs) != 1 {
		t.Errorf("CheckFIFO(out of order) = %v, want 1 violation", vs)
	}
	if vs := drill.CheckProgress(es, "L", "a", ms(1), 2*time.Millisecond); len(vs) != 1 {
		t.Errorf("CheckProgress(late) = %v, want 1 violation", vs)
	}
	if vs := drill.CheckProgress(es, "L", "a", ms(7), time.Second); len(vs) != 1 {
		t.Errorf("CheckProgress(no grant) = %v, want 1 violation", vs)
	}

	told := newHist()
	told.acquire("a", "L", 10, 1, 0)
	told.state("a", "L", 10, "suspended", 3)
	told.acquire("b", "L", 11, 2, 6)
	if vs := drill.CheckExclusive(told.rec.Events()); len(vs) != 0 {
		t.Errorf("CheckExclusive(told suspended first) = %v, want none", vs)
	}
	late := newHist()
	late.acquire("a", "L", 10, 1, 0)
	late.acquire("b", "L", 11, 2, 6)
	late.state("a", "L", 10, "lost", 7)
	if vs := drill.CheckExclusive(late.rec.Events()); len(vs) != 1 {
		t.Errorf("CheckExclusive(told after the grant) = %v, want 1 violation (I7)", vs)
	}

	w := newHist()
	for i := 0; i < 3; i++ {
		w.rec.Record(drill.Event{Client: "x", Op: drill.OpWatch, Phase: drill.Info, Name: "L"})
	}
	w.rec.Record(drill.Event{Client: "y", Op: drill.OpWatch, Phase: drill.Info, Name: "L"})
	if vs := drill.CheckWakeups(w.rec.Events(), "L", 1); len(vs) != 1 {
		t.Errorf("CheckWakeups = %v, want 1 violation (x watched 3 times)", vs)
	}
}

func TestRecorderRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	rec := drill.NewRecorder(&buf)
	op := rec.Begin("c", drill.OpAcquire, "L", 0)
	op.End(drill.Ok, func(e *drill.Event) { e.Token = 7; e.Entry = "L/x" })
	heal := rec.Fault("c", "blackhole")
	heal()
	heal()
	es, err := drill.ReadHistory(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 4 { // acquire invoke and ok, fault injected and healed (once)
		t.Fatalf("ReadHistory = %d events, want 4", len(es))
	}
	if es[1].Token != 7 || es[1].ID != es[0].ID || es[1].Phase != drill.Ok {
		t.Errorf("completion = %+v, want token 7, id %d, ok", es[1], es[0].ID)
	}
	if es[2].Detail != "blackhole" || es[3].Detail != "blackhole" || es[3].Phase != drill.Ok {
		t.Errorf("fault events = %+v %+v", es[2], es[3])
	}
	if !(es[0].T <= es[1].T && es[1].T <= es[2].T) {
		t.Errorf("timestamps not monotonic: %d %d %d", es[0].T, es[1].T, es[2].T)
	}
}
