package engine

import (
	"slices"

	"github.com/baton-go/baton/internal/bridge"
)

// Schemes lists the URL schemes the engines linked into this program
// registered, sorted: a program that opens its users' URLs through
// baton.Open (the CLI) names them in its messages, and learns of a new
// engine from its import alone.
func Schemes() []string {
	s := bridge.Schemes()
	slices.Sort(s)
	return s
}

// Lists reports, offline, whether the engine registered for scheme lists
// its lock names (its Driver set Lists).
func Lists(scheme string) bool { return bridge.Lists(scheme) }
