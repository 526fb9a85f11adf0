package drill

import "github.com/baton-go/baton/drill/scenario"

// resultWord is a scenario's RESULT: ok, FAILED (a trial broke an
// invariant), or interrupted (none broke, and a signal cut the last one
// short: it has no verdict).
func resultWord(s scenario.Result) string {
	switch {
	case !s.Passed:
		return "FAILED"
	case s.Interrupted:
		return "interrupted"
	}
	return "ok"
}
