package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/baton-go/baton/engine"
)

// TestSchemesListsRegistered: a scheme an engine registers is listed,
// sorted, and one no engine registered is not.
func TestSchemesListsRegistered(t *testing.T) {
	open := func(context.Context, engine.Config) (engine.Conn, error) { return nil, nil }
	engine.Register(engine.Driver{Open: open}, "zz-schemes-test", "aa-schemes-test")
	got := engine.Schemes()
	if !slices.Contains(got, "zz-schemes-test") || !slices.Contains(got, "aa-schemes-test") {
		t.Errorf("Schemes() = %q, want both registered schemes", got)
	}
	if !slices.IsSorted(got) {
		t.Errorf("Schemes() = %q, not sorted", got)
	}
	if slices.Contains(got, "never-registered") {
		t.Errorf("Schemes() = %q lists a scheme no engine registered", got)
	}
}
