package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/baton-go/baton/drill/scenario"
)

// interruptedTrial is the trial a signal cut short. It has no verdict:
// what its check found (the scenario's "interrupted" note, a fault left
// half done) says nothing of the lock.
type interruptedTrial struct {
	scenario string // "" when no trial was cut short
	trial    int    // from 0, as the violations count
}

// drillRun is what a drill reports: the scenarios' results, and the
// trial a signal cut short if one was.
type drillRun struct {
	scenario.Report
	interrupted interruptedTrial
}

// interruptedTrialOf reports the trial of scenario name that was cut short, if any.
func (r drillRun) interruptedTrialOf(name string) (int, bool) {
	if r.interrupted.scenario == "" || r.interrupted.scenario != name {
		return 0, false
	}
	return r.interrupted.trial, true
}

// withoutVerdict returns rep with the verdict of the interrupted trial
// it removed: its violations, and the scenario's failure and kept
// history when no other trial broke.
func withoutVerdict(rep scenario.Report, it interruptedTrial) drillRun {
	run := drillRun{Report: rep, interrupted: it}
	if it.scenario == "" {
		return run
	}
	run.Scenarios = slices.Clone(rep.Scenarios)
	prefix := fmt.Sprintf("trial %d (seed ", it.trial) // scenario.Result's Violations
	for i := range run.Scenarios {
		s := &run.Scenarios[i]
		if s.Name != it.scenario {
			continue
		}
		s.Violations = slices.DeleteFunc(slices.Clone(s.Violations), func(v string) bool { return strings.HasPrefix(v, prefix) })
		if len(s.Violations) == 0 {
			s.Passed, s.History = true, "" // the history was the cut trial's
		}
	}
	return run
}

// resultWord is a scenario's RESULT: ok, FAILED (a trial broke an
// invariant), or interrupted (none broke, one was cut short).
func (r drillRun) resultWord(s scenario.Result) string {
	_, cut := r.interruptedTrialOf(s.Name)
	switch {
	case !s.Passed:
		return "FAILED"
	case cut:
		return "interrupted"
	}
	return "ok"
}
