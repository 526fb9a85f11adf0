package main_test

import (
	"strings"
	"testing"
)

// TestRedisTTLGranularity: on Redis and Redlock a --ttl the engine cannot
// honour exits 64 before anything connects (the servers here are closed
// ports): under 1ms it used to become the engines' 15s default, and a
// fraction of a millisecond was dropped.
func TestRedisTTLGranularity(t *testing.T) {
	backends := []string{"redis://127.0.0.1:1", "redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}
	for _, b := range backends {
		for _, tc := range []struct{ ttl, says string }{
			{"500us", "at least 300ms"},
			{"1ns", "at least 300ms"},
			{"100ms", "at least 300ms"},
			{"300.5ms", "whole milliseconds"},
		} {
			r := runBaton(t, nil, "run", "--backend", b, "--ttl", tc.ttl, "--connect-timeout", "300ms", "n", "--", "true")
			if r.code != 64 || !strings.Contains(r.stderr, tc.says) {
				t.Errorf("run --backend %s --ttl %s = exit %d, want 64 saying %q; stderr:\n%s", b, tc.ttl, r.code, tc.says, r.stderr)
			}
		}
		r := runBaton(t, nil, "run", "--backend", b, "--ttl", "300ms", "--connect-timeout", "300ms", "n", "--", "true")
		if r.code != 69 {
			t.Errorf("run --backend %s --ttl 300ms = exit %d, want 69 (accepted, then unreachable); stderr:\n%s", b, r.code, r.stderr)
		}
	}
}
