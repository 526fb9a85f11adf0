package drill

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/drill/scenario"
)

// TestDrillURLHosts: the fault proxies replace exactly the host list of a
// URL, whatever its scheme; credentials, path and query stay.
func TestDrillURLHosts(t *testing.T) {
	tests := []struct {
		raw   string
		hosts []string
		dial  string
	}{
		{"zk://h1:2181,h2/chroot", []string{"h1:2181", "h2:2181"}, "zk://127.0.0.1:1,127.0.0.1:2/chroot"},
		{"zk://u:p@w@h1", []string{"h1:2181"}, "zk://u:p@w@127.0.0.1:1,127.0.0.1:2"},
		{"etcd://h1,h2:2380", []string{"h1:2379", "h2:2380"}, "etcd://127.0.0.1:1,127.0.0.1:2"},
		{"etcds://u:p@[::1]", []string{"[::1]:2379"}, "etcds://u:p@127.0.0.1:1,127.0.0.1:2"},
		{"postgres://u:pw@db.example:5433/baton?sslmode=disable&password=x", []string{"db.example:5433"},
			"postgres://u:pw@127.0.0.1:1,127.0.0.1:2/baton?sslmode=disable&password=x"},
		{"mysql://root@h/baton", []string{"h:3306"}, "mysql://root@127.0.0.1:1,127.0.0.1:2/baton"},
		{"redis://:pw@h", []string{"h:6379"}, "redis://:pw@127.0.0.1:1,127.0.0.1:2"},
		{"redlock://a:1,b:2,c:3?prefix=p:", []string{"a:1", "b:2", "c:3"}, "redlock://127.0.0.1:1,127.0.0.1:2?prefix=p:"},
	}
	for _, tt := range tests {
		u, err := backend.SplitURL(tt.raw)
		if err != nil {
			t.Fatalf("SplitURL(%q) = %v", tt.raw, err)
		}
		if got := backend.Hosts(u); !slices.Equal(got, tt.hosts) {
			t.Errorf("Hosts(%q) = %q, want %q", tt.raw, got, tt.hosts)
		}
		if got := withHosts(tt.raw, []string{"127.0.0.1:1", "127.0.0.1:2"}); got != tt.dial {
			t.Errorf("withHosts(%q) = %q, want %q", tt.raw, got, tt.dial)
		}
		if got := withHosts(tt.raw, nil); got != tt.raw {
			t.Errorf("withHosts(%q, nil) = %q, want the URL unchanged", tt.raw, got)
		}
	}
}

// sampleReport is a drill of two scenarios, one skipped, whose timeline
// has a client name that is markup.
func sampleReport() scenario.Report {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	return scenario.Report{Engine: "etcd", Seed: 7, Prefix: "baton-drill/abc", Scenarios: []scenario.Result{
		{Name: "paused", Engine: "etcd", Trials: 2, UnfencedStaleAccepted: 1, Passed: true,
			NextGrant: []time.Duration{ms(2300), ms(2100), ms(2900)}, LostLead: []time.Duration{ms(900), ms(450)},
			Timelines: []scenario.Timeline{{Trial: 1, Seed: 7,
				Spans: []scenario.Span{{Client: "A", Kind: "held", From: 0, To: ms(1500)}, {Client: "A", Kind: "suspended", From: ms(1500), To: ms(4000)},
					{Client: "<b>B</b>", Kind: "waited", From: ms(100), To: ms(3500)}, {Client: "<b>B</b>", Kind: "held", From: ms(3500), To: ms(5000)}},
				Marks: []scenario.Mark{{Client: "A", Kind: "pause", At: ms(1500)}, {Client: "A", Kind: "lost", At: ms(4100)},
					{Client: "A", Kind: "write-refused", At: ms(4200), Detail: "token 3 < 4"}}}}},
		{Name: "cut", Engine: "etcd", Skipped: "no servers to cut off", Passed: true},
	}}
}

// TestDrillJSON: the --json fields the issue names, null where nothing
// was measured.
func TestDrillJSON(t *testing.T) {
	var b bytes.Buffer
	if err := cli.WriteJSON(&b, toDrillJSON(sampleReport(), 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Passed    bool             `json:"passed"`
		Scenarios []map[string]any `json:"scenarios"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if !got.Passed || len(got.Scenarios) != 2 {
		t.Fatalf("passed %v, %d scenarios; want true, 2\n%s", got.Passed, len(got.Scenarios), b.String())
	}
	p := got.Scenarios[0]
	for k, want := range map[string]any{"name": "paused", "engine": "etcd", "trials": 2.0, "fenced_stale_accepted": 0.0,
		"unfenced_stale_accepted": 1.0, "orphans": 0.0, "passed": true,
		"next_grant_ms": map[string]any{"p50": 2300.0, "max": 2900.0}, "lost_lead_ms": map[string]any{"min": 450.0}} {
		if g, _ := json.Marshal(p[k]); string(g) != mustJSON(t, want) {
			t.Errorf("paused.%s = %s, want %s", k, g, mustJSON(t, want))
		}
	}
	if c := got.Scenarios[1]; c["next_grant_ms"] != nil || c["lost_lead_ms"] != nil || c["skipped"] == nil {
		t.Errorf("skipped scenario: %v; want null measurements and the reason", c)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDrillHTMLRender: one timeline per trial with a lane per client and
// a mark per event, the names escaped, and nothing fetched from anywhere.
func TestDrillHTMLRender(t *testing.T) {
	var b bytes.Buffer
	if err := writeDrillHTML(&b, sampleReport(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for what, n := range map[string]int{
		`<svg class="timeline"`:               1,
		`<g class="lane"`:                     2,
		`<g class="mark m-pause" tra`:         1,
		`<g class="mark m-lost" tra`:          1,
		`<g class="mark m-write-refused" tra`: 1,
		`<tr data-scenario=`:                  2,
	} {
		if got := strings.Count(page, what); got != n {
			t.Errorf("%d × %s, want %d", got, what, n)
		}
	}
	if n := len(regexp.MustCompile(`<rect class="span \w+" x=`).FindAllString(page, -1)); n != 4 {
		t.Errorf("%d spans drawn, want 4", n)
	}
	if strings.Contains(page, "<b>B</b>") || !strings.Contains(page, "&lt;b&gt;B&lt;/b&gt;") {
		t.Errorf("a client name was not escaped")
	}
	for _, remote := range []string{"http://", "https://", "src=", "href=\"http", "<script", "@import", "url("} {
		if strings.Contains(page, remote) {
			t.Errorf("the page has %q: it must be self-contained", remote)
		}
	}
}

func TestDrillP50Max(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tt := range []struct {
		in      []time.Duration
		p50, mx time.Duration
	}{
		{[]time.Duration{ms(5)}, ms(5), ms(5)},
		{[]time.Duration{ms(9), ms(1), ms(5), ms(3)}, ms(3), ms(9)},
		{[]time.Duration{ms(9), ms(1), ms(5)}, ms(5), ms(9)},
	} {
		p50, mx, ok := p50Max(tt.in)
		if !ok || p50 != tt.p50 || mx != tt.mx {
			t.Errorf("p50Max(%v) = %v, %v, %v; want %v, %v, true", tt.in, p50, mx, ok, tt.p50, tt.mx)
		}
	}
	if _, _, ok := p50Max(nil); ok {
		t.Errorf("p50Max(nil) ok, want not")
	}
}
