package engine

import (
	"net"
	"slices"
	"strings"

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

// Warning returns the warning of rawURL's engine about how it reaches
// its servers (Driver.Warn), for a program to show before it connects;
// "" when there is none. getenv reads the engine's variables.
func Warning(rawURL string, getenv func(string) string) string {
	scheme, _, _ := strings.Cut(rawURL, "://")
	return bridge.Warning(strings.ToLower(scheme), rawURL, getenv)
}

// Loopback reports whether host is this machine: a loopback name or
// address, or a Unix socket directory (PostgreSQL's host=/path). Names
// are not resolved: the check is made offline, before connecting. A
// server on this host is not what transport warnings are about.
func Loopback(host string) bool {
	if strings.HasPrefix(host, "/") || strings.EqualFold(host, "localhost") ||
		strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
