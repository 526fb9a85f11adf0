package drill_test

import (
	"testing"

	"github.com/baton-go/baton/drill"
)

// occupy records a grant entering resource (call..ret) and its uses at
// the given [invoke, ok] pairs; a use with ok < 0 was rejected as stale.
func (h *hist) occupy(client, resource string, tok uint64, enter [2]int, uses ...[2]int) {
	owner := client + "-entry"
	h.op(client, drill.OpEnter, resource, tok, owner, nil, enter[0], drill.Ok, nil, enter[1], "")
	for _, u := range uses {
		if u[1] < 0 {
			h.op(client, drill.OpWrite, resource, tok, owner, nil, u[0], drill.Fail, nil, u[0]+1, drill.StaleDetail)
			continue
		}
		h.op(client, drill.OpWrite, resource, tok, owner, nil, u[0], drill.Ok, nil, u[1], "")
	}
}

func TestCheckOccupancy(t *testing.T) {
	const res = "res/permits"
	t.Run("empty", func(t *testing.T) {
		if _, err := drill.CheckOccupancy(nil, res, 2); err == nil {
			t.Errorf("CheckOccupancy(no events) = nil error, want one: a check that saw nothing proves nothing")
		}
	})
	t.Run("n-at-once", func(t *testing.T) {
		// a and b overlap; c starts after a's last use was sent.
		h := newHist()
		h.occupy("a", res, 1, [2]int{0, 1}, [2]int{10, 11}, [2]int{50, 51})
		h.occupy("b", res, 2, [2]int{2, 3}, [2]int{100, 101})
		h.occupy("c", res, 3, [2]int{60, 61}, [2]int{70, 71})
		vs, err := drill.CheckOccupancy(h.rec.Events(), res, 2)
		if err != nil || len(vs) != 0 {
			t.Errorf("CheckOccupancy(2 at once, N=2) = %v, %v; want none", vs, err)
		}
	})
	t.Run("n-plus-one", func(t *testing.T) {
		// The unfenced control: a keeps working past c's whole tenure
		// while b holds the other permit.
		h := newHist()
		h.occupy("a", res, 1, [2]int{0, 1}, [2]int{10, 11}, [2]int{200, 201})
		h.occupy("b", res, 2, [2]int{2, 3}, [2]int{300, 301})
		h.occupy("c", res, 3, [2]int{60, 61}, [2]int{70, 71}, [2]int{80, 81})
		vs, err := drill.CheckOccupancy(h.rec.Events(), res, 2)
		if err != nil || len(vs) == 0 {
			t.Errorf("CheckOccupancy(3 at once, N=2) = %v, %v; want an I1 violation", vs, err)
		}
	})
	t.Run("fenced", func(t *testing.T) {
		// The same timeline with a's late use rejected: a's occupancy ends
		// at its last accepted use.
		h := newHist()
		h.occupy("a", res, 1, [2]int{0, 1}, [2]int{10, 11}, [2]int{200, -1})
		h.occupy("b", res, 2, [2]int{2, 3}, [2]int{300, 301})
		h.occupy("c", res, 3, [2]int{60, 61}, [2]int{70, 71}, [2]int{80, 81})
		vs, err := drill.CheckOccupancy(h.rec.Events(), res, 2)
		if err != nil || len(vs) != 0 {
			t.Errorf("CheckOccupancy(fenced) = %v, %v; want none", vs, err)
		}
	})
}

func TestCheckHolders(t *testing.T) {
	const name = "sem"
	h := newHist()
	h.acquire("a", name, 1, 1, 0)
	h.acquire("b", name, 2, 2, 10)
	// c is granted while a and b both still hold, untold: three holders.
	h.acquire("c", name, 3, 3, 20)
	if vs := drill.CheckHolders(h.rec.Events(), name, 2); len(vs) != 1 {
		t.Errorf("CheckHolders(3 untold holders, N=2) = %v, want one I7 violation", vs)
	}
	h = newHist()
	h.acquire("a", name, 1, 1, 0)
	h.acquire("b", name, 2, 2, 10)
	h.rec.Record(drill.Event{Client: "a", Op: drill.OpState, Phase: drill.Info, Name: name, Token: 1, Detail: "suspended", T: ms(15)})
	h.acquire("c", name, 3, 3, 20)
	if vs := drill.CheckHolders(h.rec.Events(), name, 2); len(vs) != 0 {
		t.Errorf("CheckHolders(a told suspended before c's grant, N=2) = %v, want none", vs)
	}
	if vs := drill.CheckHolders(h.rec.Events(), name, 1); len(vs) == 0 {
		t.Errorf("CheckHolders(N=1) with b untold at c's grant = none, want a violation")
	}
}
