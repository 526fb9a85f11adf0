package drill

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// regIn is one resource operation as the model sees it.
type regIn struct {
	Write bool
	Token uint64
	Owner string
	Value int64 // the value written
}

// Outcomes of a resource operation.
const (
	outOk      = "ok"
	outStale   = "stale"   // rejected by the fence: no effect
	outFail    = "fail"    // failed for another reason: no effect
	outUnknown = "unknown" // may or may not have taken effect
)

type regOut struct {
	Status string
	Value  int64 // the value read
}

// regState is the fenced register: the highest accepted (token, owner)
// and the value.
type regState struct {
	Token uint64
	Owner string
	Value int64
}

// admits is the fence rule of package fence: a greater token, or an equal
// token from the same owner (one grant writing repeatedly).
func (s regState) admits(token uint64, owner string) bool {
	return token > s.Token || (token == s.Token && owner == s.Owner)
}

// FencedRegister is the sequential specification of a fenced resource
// (a register whose every read and write carries a fencing token): an
// operation is accepted, and advances the fence, exactly when its token is
// greater than the highest accepted one or equal with the same owner;
// otherwise it is rejected as stale and changes nothing. A read returns
// the value of the last accepted write. Operations with unknown outcomes
// may or may not have happened.
//
// A history of an unfenced resource that saw a stale write is not
// linearizable under this model: that is how the negative control fails.
var FencedRegister = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{regState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(regState), input.(regIn), output.(regOut)
		next := s
		next.Token, next.Owner = in.Token, in.Owner
		if in.Write {
			next.Value = in.Value
		}
		ok := s.admits(in.Token, in.Owner)
		switch out.Status {
		case outOk:
			if !ok || (!in.Write && out.Value != s.Value) {
				return nil
			}
			return []interface{}{next}
		case outStale:
			if ok {
				return nil
			}
			return []interface{}{s}
		case outFail:
			return []interface{}{s}
		default: // unknown
			if ok {
				return []interface{}{s, next}
			}
			return []interface{}{s}
		}
	},
	Equal: func(a, b interface{}) bool { return a.(regState) == b.(regState) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(regIn), output.(regOut)
		if in.Write {
			return fmt.Sprintf("write(%d, tok %d %s) → %s", in.Value, in.Token, short(in.Owner), out.Status)
		}
		if out.Status == outOk {
			return fmt.Sprintf("read(tok %d %s) → %d", in.Token, short(in.Owner), out.Value)
		}
		return fmt.Sprintf("read(tok %d %s) → %s", in.Token, short(in.Owner), out.Status)
	},
	DescribeState: func(state interface{}) string {
		s := state.(regState)
		return fmt.Sprintf("value %d, fence (%d, %s)", s.Value, s.Token, short(s.Owner))
	},
}

func short(s string) string {
	if len(s) > 12 {
		return "…" + s[len(s)-10:]
	}
	return s
}

// StaleDetail is the Detail a drill records on a resource operation the
// fence rejected (with Phase Fail).
const StaleDetail = "stale"

// registerOps turns the reads and writes on resource into porcupine
// operations. Invokes without a completion, and completions marked
// Unknown, are pending until the end of time.
func registerOps(events []Event, resource string) []porcupine.Operation {
	type key struct {
		client string
		id     int64
	}
	inv := map[key]Event{}
	done := map[key]Event{}
	var order []key
	for _, e := range events {
		if e.Name != resource || (e.Op != OpRead && e.Op != OpWrite) {
			continue
		}
		k := key{e.Client, e.ID}
		if e.Phase == Invoke {
			inv[k] = e
			order = append(order, k)
		} else {
			done[k] = e
		}
	}
	clients := map[string]int{}
	var ops []porcupine.Operation
	for _, k := range order {
		i := inv[k]
		in := regIn{Write: i.Op == OpWrite, Token: i.Token, Owner: i.Entry}
		if i.Value != nil {
			in.Value = *i.Value
		}
		out := regOut{Status: outUnknown}
		ret := int64(math.MaxInt64)
		if d, ok := done[k]; ok {
			switch {
			case d.Phase == Ok:
				out.Status = outOk
				if d.Value != nil {
					out.Value = *d.Value
				}
				ret = d.T
			case d.Phase == Fail && d.Detail == StaleDetail:
				out.Status, ret = outStale, d.T
			case d.Phase == Fail:
				out.Status, ret = outFail, d.T
			}
		}
		if _, ok := clients[k.client]; !ok {
			clients[k.client] = len(clients)
		}
		ops = append(ops, porcupine.Operation{ClientId: clients[k.client], Input: in, Call: i.T, Output: out, Return: ret})
	}
	return ops
}

// RegisterResult is the outcome of CheckRegister.
type RegisterResult struct {
	Ops    int
	Result porcupine.CheckResult
	info   porcupine.LinearizationInfo
	model  porcupine.Model
}

// Linearizable reports whether the history was found linearizable. A
// timed-out check (Unknown) is not.
func (r RegisterResult) Linearizable() bool { return r.Result == porcupine.Ok }

// Visualize writes porcupine's HTML visualisation of the check to path.
func (r RegisterResult) Visualize(path string) error {
	return porcupine.VisualizePath(r.model, r.info, path)
}

// CheckRegister checks the reads and writes on resource against
// FencedRegister with porcupine, giving up after timeout (0: one minute).
// It is a pure function of the history.
func CheckRegister(events []Event, resource string, timeout time.Duration) (RegisterResult, error) {
	ops := registerOps(events, resource)
	if len(ops) == 0 {
		return RegisterResult{}, errNoEvents
	}
	if timeout <= 0 {
		timeout = time.Minute
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	m := FencedRegister.ToModel()
	res, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
	return RegisterResult{Ops: len(ops), Result: res, info: info, model: m}, nil
}
