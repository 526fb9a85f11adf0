package bench_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// reportKeys are the report's tables in README order, with their
// headings. The README is regenerated only when the run printed every one
// of them.
var reportKeys = []struct{ key, heading string }{
	{"uncontended", "Uncontended lock+unlock: ZooKeeper and etcd"},
	{"redis", "Redis"},
	{"redlock", "Redlock"},
	{"sql", "SQL: PostgreSQL, MariaDB, SQLite"},
	{"kube", "Kubernetes: kubelock beside client-go's leaderelection"},
	{"curve-handoff", "Handoff cost curve"},
	{"curve-throughput", "Throughput against names"},
	{"curve-held", "Held leases"},
	{"redis-held", "10 000 held Redis leases, renewal detail"},
	{"handoff", "Handoff, ZooKeeper and etcd, with the release and wake split"},
	{"recipes", "Recipes: RW lock and semaphore"},
	{"leader", "Leader handoff"},
	{"observer", "Observer cost"},
}

// readmeIntro is the part of the README that does not depend on the run.
const readmeIntro = `# baton benchmarks

A separate module (` + "`github.com/baton-go/baton/bench`" + `, tied to the others by the repository's
` + "`go.work`" + `) so the peers it measures never enter the library's go.mod. It measures baton beside
go-zookeeper's ` + "`zk.Lock`" + `, etcd's ` + "`concurrency.Mutex`" + `, bsm/redislock, go-redsync, the SQL
databases' own session locks, client-go's LeaderElector and each engine's bare round-trip floor,
on the same servers in the same run, and reports ratios against baton's targets, and cost curves
on every engine (ZooKeeper, etcd, Redis, Redlock, PostgreSQL, MariaDB, SQLite). See doc.go for what is measured and how requests
are counted.

Run the report after starting the servers (it regenerates this file and the charts in
` + "`results/`" + ` when every section ran):
` + "`eval \"$(../scripts/servers.sh start)\"; cd bench && go test -tags bench -run TestRatios -v -timeout 60m`" + `

- ` + "`BATON_BENCH_ROUNDS=n`" + ` — interleaved rounds per uncontended pair (default 9; the median is reported).
- ` + "`BATON_BENCH_MAX_WAITERS=n`" + ` — the most waiters of the handoff curve (default 2000; the curve is drawn
  at 5, 50, 500, 2000 up to it). ` + "`BATON_BENCH_HELD=n`" + ` — leases of the held row (default 10 000).
  ` + "`BATON_BENCH_TPUT=3s`" + ` — how long each throughput point of fewer names runs; the most names, the
  floor and the peer run interleaved, ` + "`BATON_BENCH_ROUNDS`" + ` rounds of ` + "`BATON_BENCH_TPUT_ROUND=500ms`" + ` each.
- ` + "`BATON_BENCH_ZK`, `BATON_BENCH_ETCD`, `BATON_BENCH_REDIS`, `BATON_BENCH_REDLOCK=h:p,…`" + ` — measure on these
  servers instead of the ` + "`BATON_TEST_*`" + ` ones (the uncontended ZooKeeper rows count requests with
  ` + "`mntr`" + `, every client of the server included: use a server nobody else uses during the run).
- ` + "`BATON_BENCH_STRICT=1`" + ` — a missed target fails the test (by default it is reported only).
- One section only: ` + "`-run 'TestRatios/sql'`" + ` (or ` + "`/redis`, `/redlock`, `/kube`, `/observer`, `/curves`" + `, …); a
  partial run does not touch this file.

Without ` + "`-tags bench`" + `, ` + "`go test -race ./...`" + ` runs the smoke: every measured lock+unlock really
locks and unlocks, the curves at small sizes on every engine, and ` + "`TestRequestGuard`" + `, which fails
when an engine's uncontended lock+unlock sends more requests than its protocol needs (counted
exactly on the client's side: ZooKeeper 3, etcd 2, Redis 2, Redlock 2N over N nodes,
PostgreSQL 2, MariaDB 2, Kubernetes 4; the reason for each number is beside it in guard_test.go).
` + "`TestAllocGuard`" + ` (run without ` + "`-race`" + `, which turns sync.Pool off) fails when baton's
uncontended lock+unlock allocates more than its ceiling in allocguard_test.go: the fewest
allocations of one operation over 30, which do not depend on the host.
`

// hostCaption says where and when the run happened.
func hostCaption(start time.Time, rounds int, s curveSizes) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown host"
	}
	return fmt.Sprintf("Run of %s (%s to %s UTC) on %s (%s/%s, %d CPUs, %s); %d interleaved rounds per uncontended pair; "+
		"handoff curve at %v waiters (%v or 500 handoffs per point), throughput of %d clients over %v names (%v per point; at the most names %d rounds of %v beside the floor and the peer), %d held leases. "+
		"The servers and the host are shared with other test runs, so absolute times are noisy; ratios taken in the same run are the figures to read.",
		start.UTC().Format("2006-01-02"), start.UTC().Format("15:04"), time.Now().UTC().Format("15:04"), host,
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), rounds,
		s.waiters, s.handoff, s.clients, s.names, s.tput, s.rounds, s.round, s.held)
}

// writeReadme regenerates README.md (the whole file) and the charts from
// the run's record. It refuses a partial run.
func writeReadme(dir string, start time.Time, rounds int, c curves, misses []string) error {
	runRec.mu.Lock()
	sections := slices.Clone(runRec.sections)
	unc, peers := runRec.uncontended, runRec.peerNames
	runRec.mu.Unlock()
	byKey := make(map[string]string)
	for _, s := range sections {
		byKey[s.key] = s.text
	}
	for _, k := range reportKeys {
		if _, ok := byKey[k.key]; !ok {
			return fmt.Errorf("section %q did not run: README.md left as it is", k.key)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, resultsDir), 0o755); err != nil {
		return err
	}
	charts, err := writeCharts(filepath.Join(dir, resultsDir), c, unc, peers)
	if err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	var b strings.Builder
	b.WriteString("<!-- Generated by TestRatios (go test -tags bench -run TestRatios) from one run. Do not edit by hand: run the report again. -->\n\n")
	b.WriteString(readmeIntro)
	b.WriteString("\n## Latest run\n\n")
	b.WriteString("_This section, the tables and the charts are written by the run they describe (readme_test.go); do not edit by hand._\n\n")
	b.WriteString(hostCaption(start, rounds, c.sizes) + "\n\n")
	if len(misses) > 0 {
		b.WriteString("Targets missed in this run:\n\n")
		for _, m := range misses {
			b.WriteString("- " + m + "\n")
		}
		b.WriteString("\n")
	} else {
		b.WriteString("Every target was met in this run.\n\n")
	}
	b.WriteString("### Charts\n\n")
	for _, ch := range charts {
		fmt.Fprintf(&b, "![%s](%s/%s)\n\n_%s_\n\n", ch.title, resultsDir, ch.file, ch.title)
	}
	b.WriteString("### Tables\n")
	for _, k := range reportKeys {
		fmt.Fprintf(&b, "\n#### %s\n\n```text\n%s\n```\n", k.heading, strings.TrimRight(byKey[k.key], "\n "))
	}
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(b.String()), 0o644)
}
