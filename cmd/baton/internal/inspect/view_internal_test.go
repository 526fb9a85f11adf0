package inspect

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

func TestWriteInspectionShowsTheHolderProcess(t *testing.T) {
	in := baton.Inspection{Name: "orders/42", Engine: "redis",
		Holders: []baton.Entry{{Mode: "mutex", Token: 12, Owner: "ab12", Age: 3 * time.Second, Left: 7 * time.Second,
			Process: baton.Process{Host: "web-1", PID: 4242, Program: "worker", Labels: map[string]string{"team": "pay"}}}},
		Waiters: []baton.Entry{{Mode: "mutex", Owner: "cd34\x1b[2J", Dead: true, Note: "session gone"}},
	}
	var b bytes.Buffer
	if err := writeInspection(&b, in); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"holder", "web-1", "4242", "worker team=pay", "12", "3s", "7s", "waiting", `cd34\x1b[2J`, "dead"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("table carries a raw escape:\n%q", out)
	}
	var j inspectionJSON
	var jb bytes.Buffer
	if err := cli.WriteJSON(&jb, toInspectionJSON(in)); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(jb.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	h := j.Holders[0]
	if h.Host != "web-1" || h.PID != 4242 || h.Program != "worker" || h.Labels["team"] != "pay" || *h.Token != 12 || *h.LeftMS != 7000 {
		t.Errorf("JSON holder = %+v", h)
	}
	if w := j.Waiters[0]; w.Token != nil || w.AgeMS != nil || !w.Dead {
		t.Errorf("JSON waiter = %+v: unknown token and age must be null", w)
	}
}
