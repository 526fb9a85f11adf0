package batonprom_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	batonprom "github.com/baton-go/baton/prom"
)

// documented is one counter or gauge of README.md's metric table.
type documented struct {
	name, class string   // class: the result, cause or outcome label, if any
	values      []string // the class values the table lists
}

// documentedMetrics parses README.md's metric table: its counters and
// gauges, each with its class label and the values listed for it.
func documentedMetrics(t *testing.T) []documented {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	tick := regexp.MustCompile("`([a-z_]+)`")
	var out []documented
	for _, line := range strings.Split(string(b), "\n") {
		cols := strings.Split(line, "|")
		if len(cols) != 6 || !strings.HasPrefix(strings.TrimSpace(cols[1]), "`baton_") {
			continue
		}
		typ := strings.TrimSpace(cols[2])
		if typ != "counter" && typ != "gauge" {
			continue
		}
		d := documented{name: strings.Trim(strings.TrimSpace(cols[1]), "`")}
		for _, m := range tick.FindAllStringSubmatch(cols[3], -1) {
			if m[1] != "engine" && m[1] != "name" {
				d.class = m[1]
			}
		}
		if d.class != "" {
			for _, m := range tick.FindAllStringSubmatch(cols[4], -1) {
				d.values = append(d.values, m[1])
			}
		}
		out = append(out, d)
	}
	if len(out) < 13 {
		t.Fatalf("README.md table: %d counters and gauges parsed, want the 13 it lists", len(out))
	}
	return out
}

// TestFreshCollectorShowsDocumentedSeries: before any event, a Collector
// built for its engines exposes every counter and gauge README.md lists,
// with every result, cause and outcome it lists, all at 0, so that
// increase(baton_stale_rejections_total[5m]) > 0 and its kin see the
// first event of a process instead of a series born at 1.
func TestFreshCollectorShowsDocumentedSeries(t *testing.T) {
	f := newScraper(t, batonprom.Options{Engines: []string{"zk", "redis"}}).scrape()
	for _, d := range documentedMetrics(t) {
		mf := f[d.name]
		if mf == nil {
			t.Errorf("%s is not exposed before the first event", d.name)
			continue
		}
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue() + m.GetGauge().GetValue(); v != 0 {
				t.Errorf("%s%s = %v before any event", d.name, labelSets(mf), v)
			}
		}
		for _, v := range d.values {
			found := false
			for _, m := range mf.GetMetric() {
				found = found || hasLabels(m, d.class+"="+v)
			}
			if !found {
				t.Errorf("%s{%s=%q} is not exposed before the first event (have %s)", d.name, d.class, v, labelSets(mf))
			}
		}
	}
	wantValue(t, "baton_acquires_total{zk,mutex,granted}", f.value(t, "baton_acquires_total", "engine=zk,recipe=mutex,result=granted"), 0)
	wantValue(t, "baton_leases_held{redis,election}", f.value(t, "baton_leases_held", "engine=redis,recipe=election"), 0)
	wantValue(t, "baton_renewals_total{redis,ok}", f.value(t, "baton_renewals_total", "engine=redis,result=ok"), 0)
	wantValue(t, "baton_recovered_creates_total{zk}", f.value(t, "baton_recovered_creates_total", "engine=zk"), 0)
	if mf := f["baton_renewals_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			if hasLabels(m, "engine=zk") {
				t.Errorf("baton_renewals_total shows ZooKeeper, which has no keeper renewals")
			}
		}
	}
}

// TestFreshCollectorWithoutEngines: the series whose labels never depend
// on the engine are there at 0 even when the Collector is told nothing:
// the stale-write alert's series above all. With LockNames the stale
// series is per name and cannot be; the outcome counters still are.
func TestFreshCollectorWithoutEngines(t *testing.T) {
	f := newScraper(t, batonprom.Options{}).scrape()
	wantValue(t, "baton_stale_rejections_total{fence}", f.value(t, "baton_stale_rejections_total", "engine=fence"), 0)
	wantValue(t, "baton_idempotency_total{manual}", f.value(t, "baton_idempotency_total", "outcome=manual"), 0)
	wantValue(t, "baton_tasks_total{stale}", f.value(t, "baton_tasks_total", "outcome=stale"), 0)
	named := newScraper(t, batonprom.Options{LockNames: true, Engines: []string{"redis"}}).scrape()
	if named["baton_stale_rejections_total"] != nil || named["baton_acquires_total"] != nil {
		t.Errorf("with LockNames, per-name series exist before any name was seen: %v", keys(named))
	}
	wantValue(t, "LockNames: baton_renewals_total{redis,error}", named.value(t, "baton_renewals_total", "engine=redis,result=error"), 0)
	wantValue(t, "LockNames: baton_tasks_total{lost}", named.value(t, "baton_tasks_total", "outcome=lost"), 0)
}
