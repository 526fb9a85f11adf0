package main_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
)

// kubeURL is the k8s:// backend of the test kube-apiserver's admin
// kubeconfig (namespace baton-test).
func kubeURL(t *testing.T) string { return "k8s://?kubeconfig=" + testenv.K8s(t) }

// TestKubeRun: baton run on Kubernetes runs COMMAND with the kube engine
// and a token, and inspect of a lock held by a run shows the holder: this
// host, the holding baton's pid, COMMAND's name.
func TestKubeRun(t *testing.T) {
	t.Parallel()
	url, name := kubeURL(t), lockName(t)
	r := runBaton(t, nil, "run", "--backend", url, name, "--", "sh", "-c", `echo "$BATON_ENGINE $BATON_TOKEN"`)
	if r.code != 0 {
		t.Fatalf("run -- true: exit %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	f := strings.Fields(r.stdout)
	if len(f) != 2 || f[0] != "kube" {
		t.Fatalf("COMMAND saw BATON_ENGINE BATON_TOKEN = %q, want kube and a token", r.stdout)
	}
	if tok, err := strconv.ParseUint(f[1], 10, 64); err != nil || tok == 0 {
		t.Errorf("BATON_TOKEN = %q, want a positive decimal", f[1])
	}

	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	job := jobScript(t, "kube-job")
	mark := filepath.Join(t.TempDir(), "holding")
	h := startBaton(t, nil, "run", "--backend", url, "--ttl", "3", name, "--", job, mark)
	h.waitFile(t, mark, 15*time.Second)
	d, out := inspectJSON(t, nil, url, name)
	if d.Engine != "kube" || len(d.Holders) != 1 {
		t.Fatalf("inspect --json = %s, want the kube engine and one holder", out.stdout)
	}
	got := d.Holders[0]
	if got.Host != host || got.PID != h.cmd.Process.Pid || got.Program != "kube-job" || got.Token == nil || *got.Token <= 1 {
		t.Errorf("inspect holder = host %q, pid %d, program %q, token %v; want %q, %d, kube-job, a token above the first run's",
			got.Host, got.PID, got.Program, got.Token, host, h.cmd.Process.Pid)
	}
	if r := runBaton(t, nil, "run", "--backend", url, "--wait", "0", name, "--", "true"); r.code != 75 {
		t.Errorf("run --wait 0 while held: exit %d, want 75; stderr:\n%s", r.code, r.stderr)
	}
	stopHolder(t, h)
	t.Logf("holder: host %s, pid %d, program %s, token %d", got.Host, got.PID, got.Program, *got.Token)
}

// TestKubeExitCodes: a user without update on leases is refused the
// second grant of a name (the first creates the Lease): run and elect
// exit 77 and say which verb is missing; an apiserver nobody answers for
// exits 69; a bad k8s:// URL exits 64.
func TestKubeExitCodes(t *testing.T) {
	t.Parallel()
	url, noUpdate := kubeURL(t), "k8s://?kubeconfig="+testenv.K8sNoUpdate(t)
	for _, cmd := range []string{"run", "elect"} {
		name := lockName(t) + "-" + cmd
		if r := runBaton(t, nil, cmd, "--backend", url, name, "--", "true"); r.code != 0 {
			t.Fatalf("%s as admin: exit %d, want 0; stderr:\n%s", cmd, r.code, r.stderr)
		}
		r := runBaton(t, nil, cmd, "--backend", noUpdate, "--wait", "5s", name, "--", "true")
		if r.code != 77 || !strings.Contains(r.stderr, "update") || !strings.Contains(r.stderr, "leases") {
			t.Errorf("%s without update: exit %d, want 77 and the verb named; stderr:\n%s", cmd, r.code, r.stderr)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	unreachable := "k8s://" + closed + "?kubeconfig=" + testenv.K8s(t)
	if r := runBaton(t, nil, "run", "--backend", unreachable, "--connect-timeout", "1s", lockName(t), "--", "true"); r.code != 69 {
		t.Errorf("run on a closed port: exit %d, want 69; stderr:\n%s", r.code, r.stderr)
	}

	for _, bad := range []string{
		url + "&server=https://x",
		"k8s://127.0.0.1:1,127.0.0.1:2?kubeconfig=" + testenv.K8s(t),
		"k8s://apiserver?kubeconfig=" + testenv.K8s(t),
		"k8s://?kubeconfig=" + filepath.Join(t.TempDir(), "missing"),
		"k8s://?kubeconfig=" + testenv.K8s(t) + "&namespace=Not_A_Namespace",
	} {
		if r := runBaton(t, nil, "run", "--backend", bad, lockName(t), "--", "true"); r.code != 64 {
			t.Errorf("run --backend %s: exit %d, want 64; stderr:\n%s", bad, r.code, r.stderr)
		}
	}
}

// TestKubeDrill runs every scenario once on Kubernetes, its URL naming
// the apiserver's address or leaving it to the kubeconfig: the fault
// proxies stand in front of the apiserver either way (the transport
// scenarios run), the fenced resource accepts no stale write, the
// unfenced twin accepts the paused holder's, and baton exits 0.
func TestKubeDrill(t *testing.T) {
	for _, tt := range []struct{ name, url string }{
		{"kubeconfig", kubeURL(t)},
		{"host", "k8s://" + testenv.K8sAddr(t) + "?kubeconfig=" + testenv.K8s(t)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "drill.json")
			r := startBaton(t, nil, "drill", "--backend", tt.url, "--trials", "1", "--ttl", "2s", "--herd", "8", "--json", out).wait(t, drillLimit)
			if r.code != 0 {
				t.Fatalf("baton drill: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			t.Logf("baton drill --backend %s (%v):\n%s", tt.url, r.took.Round(time.Second), r.stdout)
			rep := readDrillJSON(t, out)
			if rep.Engine != "kube" || !rep.Passed {
				t.Fatalf("report: engine %q, passed %v; want kube, true", rep.Engine, rep.Passed)
			}
			ran := map[string]bool{}
			for _, s := range rep.Scenarios {
				if s.Skipped != "" {
					continue
				}
				ran[s.Name] = true
				if s.FencedStaleAccepted != 0 || s.Orphans != 0 || !s.Passed || s.Trials != 1 {
					t.Errorf("%s: fenced_stale_accepted %d, orphans %d, passed %v, trials %d; want 0, 0, true, 1 (violations %q)",
						s.Name, s.FencedStaleAccepted, s.Orphans, s.Passed, s.Trials, s.Violations)
				}
				if (s.Name == "paused" || s.Name == "cut") && s.UnfencedStaleAccepted == 0 {
					t.Errorf("%s: the unfenced twin accepted no stale write: the drill could not have failed", s.Name)
				}
			}
			for _, want := range []string{"paused", "killed", "cut", "blackhole"} {
				if !ran[want] {
					t.Errorf("scenario %s did not run (the transport scenarios need the proxies in front of the apiserver)", want)
				}
			}
		})
	}
}

// TestExporterKube: the exporter serves a lock on Kubernetes: its holder
// and the holder's token, exactly; after the release the next holder's
// larger token replaces it. (A mutex's waiters keep no entry on a Lease,
// so none is counted.)
func TestExporterKube(t *testing.T) {
	t.Parallel()
	url, name := kubeURL(t), lockName(t)
	c, err := baton.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("baton.Open(%s) = %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	first := holdLock(t, name, func() (baton.Locker, error) { return c.Mutex(name) })
	base, _, _ := startExporter(t, url, name)
	waitMetrics(t, base, name, map[string]float64{
		"baton_lock_entries": 1, "baton_lock_holders": 1, "baton_lock_holder_token": float64(first.Token()),
	})
	if err := first.Release(t.Context()); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	second := holdLock(t, name, func() (baton.Locker, error) { return c.Mutex(name) })
	if second.Token() <= first.Token() {
		t.Fatalf("next token %d <= first %d", second.Token(), first.Token())
	}
	waitMetrics(t, base, name, map[string]float64{"baton_lock_holders": 1, "baton_lock_holder_token": float64(second.Token())})

	// A PREFIX: the locks directly under it, read from the Leases' name
	// annotations (not the deeper one).
	dir := lockName(t)
	var held []*baton.Lease
	for _, n := range []string{dir + "/a", dir + "/b", dir + "/a/deeper"} {
		held = append(held, holdLock(t, n, func() (baton.Locker, error) { return c.Mutex(n) }))
	}
	base, _, _ = startExporter(t, url, dir+"/*")
	for i, n := range []string{dir + "/a", dir + "/b"} {
		waitMetrics(t, base, n, map[string]float64{"baton_lock_holders": 1, "baton_lock_holder_token": float64(held[i].Token())})
	}
	for _, mf := range scrape(t, base) {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == dir+"/a/deeper" {
					t.Errorf("the exporter of %s/* serves %s/a/deeper, which is not directly under it", dir, dir)
				}
			}
		}
	}
}
