package drill

import (
	"fmt"
	"sort"
	"time"
)

// Violation is one broken invariant found in a history.
type Violation struct {
	Invariant string // "I1", "I2", "I5", "I7", "I10", …
	Msg       string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Msg }

// Grant is one successful acquire found in a history.
type Grant struct {
	Client string
	Name   string
	Token  uint64
	Entry  string
	Order  uint64
	At     int64 // T of the acquire's ok
	// Until is the T at which the holder stopped claiming the lock: its
	// release invoke, or the state event in which it saw the lease lost or
	// released; 0 while it still claims it at the end of the history.
	Until int64
	// Told is the T of the first state event (suspended, lost) by which the
	// holder learned its ownership was in doubt; 0 if never.
	Told int64
}

// Grants extracts the grants of name (every name when name is ""), in
// order of their acquire's ok.
func Grants(events []Event, name string) []Grant {
	var gs []Grant
	open := map[string][]int{} // client → indexes into gs still claimed
	for _, e := range events {
		if name != "" && e.Name != name {
			continue
		}
		switch {
		case e.Op == OpAcquire && e.Phase == Ok:
			gs = append(gs, Grant{Client: e.Client, Name: e.Name, Token: e.Token, Entry: e.Entry, Order: e.Order, At: e.T})
			open[e.Client] = append(open[e.Client], len(gs)-1)
		case e.Op == OpRelease && e.Phase == Invoke:
			for _, i := range open[e.Client] {
				if gs[i].Token == e.Token && gs[i].Name == e.Name && gs[i].Until == 0 {
					gs[i].Until = e.T
				}
			}
		case e.Op == OpState:
			for _, i := range open[e.Client] {
				g := &gs[i]
				if g.Token != e.Token || g.Name != e.Name {
					continue
				}
				switch e.Detail {
				case "suspended":
					if g.Told == 0 {
						g.Told = e.T
					}
				case "lost":
					if g.Told == 0 {
						g.Told = e.T
					}
					if g.Until == 0 {
						g.Until = e.T
					}
				case "released":
					if g.Until == 0 {
						g.Until = e.T
					}
				}
			}
		}
	}
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].At < gs[j].At })
	return gs
}

// CheckTokens checks I2: per name, tokens strictly increase in grant order
// and are never reused.
func CheckTokens(events []Event) []Violation {
	var vs []Violation
	last := map[string]Grant{}
	for _, g := range Grants(events, "") {
		if p, ok := last[g.Name]; ok && g.Token <= p.Token {
			vs = append(vs, Violation{"I2", fmt.Sprintf("%q: grant to %s has token %d after %s's %d", g.Name, g.Client, g.Token, p.Client, p.Token)})
		}
		last[g.Name] = g
	}
	return vs
}

// CheckExclusive checks I7 and lease-level exclusion together: whenever a
// client is granted a name, every other grant of that name still claimed
// at that moment must already have been told Suspended or Lost. With no
// faults that means no two grants ever overlap. (A frozen process cannot
// be told anything; drills that SIGSTOP a holder rely on the fence
// instead and do not run this check.)
func CheckExclusive(events []Event) []Violation {
	var vs []Violation
	gs := Grants(events, "")
	for j, b := range gs {
		for _, a := range gs[:j] {
			if a.Name != b.Name || a.Client == b.Client && a.Token == b.Token {
				continue
			}
			claimed := a.Until == 0 || a.Until > b.At
			if claimed && (a.Told == 0 || a.Told > b.At) {
				vs = append(vs, Violation{"I7", fmt.Sprintf("%q: %s granted (token %d) at %s while %s (token %d) still held it, not told suspended",
					b.Name, b.Client, b.Token, rel(events, b.At), a.Client, a.Token)})
			}
		}
	}
	return vs
}

// CheckProgress checks I5: after a holder died (or froze) at since, some
// other client is granted name by since+bound. dead is the holder's client.
func CheckProgress(events []Event, name, dead string, since int64, bound time.Duration) []Violation {
	for _, g := range Grants(events, name) {
		if g.At < since || g.Client == dead {
			continue
		}
		if d := time.Duration(g.At - since); d > bound {
			return []Violation{{"I5", fmt.Sprintf("%q: next grant (%s) %v after the holder died, want ≤ %v", name, g.Client, d, bound)}}
		}
		return nil
	}
	return []Violation{{"I5", fmt.Sprintf("%q: no grant to another client after the holder died", name)}}
}

// CheckFIFO checks I10's order: per name, grants come in queue order
// (Event.Order of the acquire's ok: the ZooKeeper sequence or the etcd
// create revision). Grants without an Order are skipped.
func CheckFIFO(events []Event) []Violation {
	var vs []Violation
	last := map[string]Grant{}
	for _, g := range Grants(events, "") {
		if g.Order == 0 {
			continue
		}
		if p, ok := last[g.Name]; ok && g.Order <= p.Order {
			vs = append(vs, Violation{"I10", fmt.Sprintf("%q: %s (queue order %d) granted after %s (order %d)", g.Name, g.Client, g.Order, p.Client, p.Order)})
		}
		last[g.Name] = g
	}
	return vs
}

// CheckWakeups checks I10's "one waiter woken per release" from the
// waiters' side: no client registers more than max watches on name. A
// waiter of a queue mutex is blocked by one predecessor at a time and,
// without cancellations, watches once; a herd re-watches on every release.
func CheckWakeups(events []Event, name string, max int) []Violation {
	n := map[string]int{}
	for _, e := range events {
		if e.Op == OpWatch && e.Name == name {
			n[e.Client]++
		}
	}
	var vs []Violation
	for c, k := range n {
		if k > max {
			vs = append(vs, Violation{"I10", fmt.Sprintf("%q: %s registered %d watches, want ≤ %d", name, c, k, max)})
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Msg < vs[j].Msg })
	return vs
}

// rel renders t relative to the first event of the history.
func rel(events []Event, t int64) string {
	if len(events) == 0 {
		return fmt.Sprint(t)
	}
	min := events[0].T
	for _, e := range events {
		if e.T < min {
			min = e.T
		}
	}
	return "+" + time.Duration(t-min).Round(time.Microsecond).String()
}
