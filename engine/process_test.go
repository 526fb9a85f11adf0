package engine

import (
	"strings"
	"testing"

	"github.com/baton-go/baton"
)

func TestProcessDataRoundTrip(t *testing.T) {
	p := baton.Process{Host: "web-1", PID: 4242, Program: "baton run", Labels: map[string]string{"team": "pay&ops", "env": "prod"}}
	data := ProcessData(p)
	if data != "host=web-1&pid=4242&prog=baton+run&l.env=prod&l.team=pay%26ops" {
		t.Errorf("ProcessData = %q", data)
	}
	got := ParseProcess(data)
	if got.Host != p.Host || got.PID != p.PID || got.Program != p.Program || len(got.Labels) != 2 || got.Labels["team"] != "pay&ops" {
		t.Errorf("ParseProcess(ProcessData(p)) = %+v, want %+v", got, p)
	}
}

func TestProcessDataIsCapped(t *testing.T) {
	labels := map[string]string{}
	for _, k := range []string{"a", "b", "c", "d"} {
		labels[k] = strings.Repeat(k, 80)
	}
	p := baton.Process{Host: strings.Repeat("h", 300), PID: 1, Program: strings.Repeat("é", 60), Labels: labels}
	data := ProcessData(p)
	if len(data) > baton.MaxProcessLen {
		t.Fatalf("len(ProcessData) = %d, want ≤ %d", len(data), baton.MaxProcessLen)
	}
	got := ParseProcess(data)
	if len(got.Host) != maxHost || got.PID != 1 || len(got.Program) > maxProgram || !strings.HasPrefix(p.Program, got.Program) {
		t.Errorf("capped record parses as %+v", got)
	}
	if len(got.Labels) == len(labels) {
		t.Errorf("every label kept in %d bytes: %q", len(data), data)
	}
}

func TestParseProcessIgnoresForeignData(t *testing.T) {
	for _, data := range []string{"", "10.0.0.7", "x=1&host=h", "host=%zz"} {
		if p := ParseProcess(data); p.Host != "" || p.PID != 0 {
			t.Errorf("ParseProcess(%q) = %+v, want zero", data, p)
		}
	}
}

func TestBadfKeepsPercentInTheURL(t *testing.T) {
	u, err := ParseURL("postgres://%2Fvar%2Frun/db")
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Badf("no %s", "database").Error(); got != "backend postgres://%2Fvar%2Frun/db: no database" {
		t.Errorf("Badf = %q", got)
	}
}
