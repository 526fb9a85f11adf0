package main_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDrillTLS: the drill's clients dial fault proxies on 127.0.0.1, but
// a TLS server's certificate names the host of the URL. A Redis server
// whose certificate names only "localhost" (no IP) must still be drilled
// through the proxies, verified by the name the URL gives.
func TestDrillTLS(t *testing.T) {
	t.Parallel()
	tc := selfSignedFor(t, t.TempDir(), "localhost")
	addr := startRedis(t, tc)
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	env := []string{"BATON_REDIS_PASSWORD=" + redisPassword, "BATON_REDIS_CACERT=" + tc.ca}
	out := filepath.Join(t.TempDir(), "drill.json")
	r := startBaton(t, env, "drill", "--backend", "rediss://localhost:"+port, "--scenarios", "cut",
		"--trials", "1", "--ttl", "2s", "--json", out).wait(t, drillLimit)
	if r.code != 0 {
		t.Fatalf("baton drill on rediss://localhost: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rep := readDrillJSON(t, out)
	if len(rep.Scenarios) != 1 || !rep.Scenarios[0].Passed || rep.Scenarios[0].UnfencedStaleAccepted == 0 {
		t.Errorf("report %+v: want the cut scenario run and passed, the unfenced twin red", rep.Scenarios)
	}
	t.Logf("baton drill over TLS (%v):\n%s", r.took.Round(time.Second), r.stdout)
}
