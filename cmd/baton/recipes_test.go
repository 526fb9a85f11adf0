package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/faultproxy"
)

// engines are the backends the recipe tests run on.
var engines = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"zk", zkURL},
	{"etcd", etcdURL},
}

func zkURL(t *testing.T) string { return "zk://" + testenv.ZK(t) + "/baton-cli-test" }

// inspectDoc is `baton inspect --json`: the same document on every
// engine.
type inspectDoc struct {
	Name    string         `json:"name"`
	Engine  string         `json:"engine"`
	Permits int            `json:"permits"`
	Holders []inspectEntry `json:"holders"`
	Waiters []inspectEntry `json:"waiters"`
	Other   []inspectEntry `json:"other"`
	Notes   []string       `json:"notes"`
}

// inspectEntry is one holder, waiter or other entry of an inspectDoc;
// Role says which list it came from.
type inspectEntry struct {
	Role      string            `json:"-"` // "holder", "waiting" or "other"
	Mode      string            `json:"mode"`
	Token     *uint64           `json:"token"`
	Owner     string            `json:"owner"`
	Host      string            `json:"host"`
	PID       int               `json:"pid"`
	Program   string            `json:"program"`
	Labels    map[string]string `json:"labels"`
	AgeMS     *int64            `json:"age_ms"`
	LeftMS    *int64            `json:"lease_left_ms"`
	Dead      bool              `json:"dead"`
	Duplicate bool              `json:"duplicate"`
	Foreign   bool              `json:"foreign"`
	Note      string            `json:"note"`
}

// entries lists the holders, then the waiters in serving order, then the
// other entries, each with its Role.
func (d inspectDoc) entries() []inspectEntry {
	var out []inspectEntry
	for _, part := range []struct {
		role string
		es   []inspectEntry
	}{{"holder", d.Holders}, {"waiting", d.Waiters}, {"other", d.Other}} {
		for _, e := range part.es {
			e.Role = part.role
			out = append(out, e)
		}
	}
	return out
}

// inspectJSON runs `baton inspect --json` with env and parses its stdout.
func inspectJSON(t *testing.T, env []string, url, name string) (inspectDoc, result) {
	t.Helper()
	r := runBaton(t, env, "inspect", "--backend", url, "--json", name)
	if r.code != 0 {
		t.Fatalf("inspect %s exit = %d, want 0; stderr:\n%s", name, r.code, r.stderr)
	}
	var d inspectDoc
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("inspect --json output %q: %v", r.stdout, err)
	}
	return d, r
}

// inspect runs `baton inspect --json` and returns its entries.
func inspect(t *testing.T, url, name string) []inspectEntry {
	t.Helper()
	d, _ := inspectJSON(t, nil, url, name)
	return d.entries()
}

// waitQueue waits until inspect shows n entries in NAME's queue.
func waitQueue(t *testing.T, url, name string, n int) []inspectEntry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		q := inspect(t, url, name)
		if len(q) >= n {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("inspect %s shows %d entries, want %d within 10s: %+v", name, len(q), n, q)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopHolder SIGTERMs a baton whose COMMAND exits 0 on SIGTERM and checks
// that it exits 0.
func stopHolder(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if r := p.wait(t, 10*time.Second); r.code != 0 {
		t.Errorf("holder after SIGTERM exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
}

// TestReadersShare: two `run --read` hold at once: each COMMAND waits to
// see the other's mark while holding.
func TestReadersShare(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			url, name, dir := e.url(t), lockName(t), t.TempDir()
			script := func(me, other string) string {
				return fmt.Sprintf(`touch %q; i=0; while [ ! -e %q ]; do sleep 0.05; i=$((i+1)); [ $i -gt 200 ] && exit 9; done; exit 0`,
					filepath.Join(dir, me), filepath.Join(dir, other))
			}
			a := startBaton(t, nil, "run", "--backend", url, "--ttl", "2", "--read", name, "--", "sh", "-c", script("a", "b"))
			b := startBaton(t, nil, "run", "--backend", url, "--ttl", "2", "--read", name, "--", "sh", "-c", script("b", "a"))
			for _, p := range []*proc{a, b} {
				if r := p.wait(t, 20*time.Second); r.code != 0 {
					t.Errorf("run --read exit = %d, want 0 (9: the readers never held at once); stderr:\n%s", r.code, r.stderr)
				}
			}
		})
	}
}

// TestWriterExcludesReaders: while --write holds, --read cannot; while
// --read holds, --write cannot; inspect shows the kinds, the holder and
// the waiter.
func TestWriterExcludesReaders(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			url, name := e.url(t), lockName(t)
			mark := filepath.Join(t.TempDir(), "writing")
			w := startBaton(t, nil, "run", "--backend", url, "--ttl", "2", "--write", name, "--", "sh", "-c", holdScript(mark, 0))
			waitFile(t, mark, 10*time.Second)
			if r := runBaton(t, nil, "run", "--backend", url, "--read", "--wait", "0", name, "--", "true"); r.code != 75 {
				t.Errorf("run --read --wait 0 under a writer: exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
			}
			ran := filepath.Join(t.TempDir(), "read")
			rd := startBaton(t, nil, "run", "--backend", url, "--ttl", "2", "--read", name, "--", "touch", ran)
			q := waitQueue(t, url, name, 2)
			if len(q) != 2 || q[0].Mode != "write" || q[0].Role != "holder" || q[1].Mode != "read" || q[1].Role != "waiting" {
				t.Errorf("inspect = %+v, want [write holder, read waiting]", q)
			}
			for i, en := range q {
				if en.Owner == "" || en.PID == 0 || en.Dead || en.Duplicate {
					t.Errorf("inspect entry %d = %+v, want an entry of a live holder process, no flags", i, en)
				}
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("the reader ran while the writer held")
			}
			stopHolder(t, w)
			if r := rd.wait(t, 10*time.Second); r.code != 0 {
				t.Errorf("waiting reader after the writer left: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
			}

			rmark := filepath.Join(t.TempDir(), "reading")
			rh := startBaton(t, nil, "run", "--backend", url, "--ttl", "2", "--read", name, "--", "sh", "-c", holdScript(rmark, 0))
			waitFile(t, rmark, 10*time.Second)
			if r := runBaton(t, nil, "run", "--backend", url, "--write", "--wait", "0", name, "--", "true"); r.code != 75 {
				t.Errorf("run --write --wait 0 under a reader: exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
			}
			stopHolder(t, rh)
		})
	}
}

// TestSharedPermits: --shared 2 lets two holders in; the third gets 75
// with --wait 0 and the permit once one holder leaves.
func TestSharedPermits(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			url, name, dir := e.url(t), lockName(t), t.TempDir()
			var holders []*proc
			for i := range 2 {
				mark := filepath.Join(dir, strconv.Itoa(i))
				holders = append(holders, startBaton(t, nil, "run", "--backend", url, "--ttl", "2", "--shared", "2", name, "--", "sh", "-c", holdScript(mark, 0)))
				waitFile(t, mark, 10*time.Second)
			}
			if r := runBaton(t, nil, "run", "--backend", url, "--shared", "2", "--wait", "0", name, "--", "true"); r.code != 75 {
				t.Errorf("third run --shared 2 --wait 0: exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
			}
			q := inspect(t, url, name)
			leases := 0
			for _, en := range q {
				if en.Mode == "permit" {
					leases++
					if en.Role != "holder" {
						t.Errorf("inspect lease %+v, want a holder (N=2 is stored with baton's leases)", en)
					}
				}
			}
			if leases != 2 {
				t.Errorf("inspect shows %d leases, want 2: %+v", leases, q)
			}
			stopHolder(t, holders[0])
			if r := runBaton(t, nil, "run", "--backend", url, "--shared", "2", "--wait", "0", name, "--", "true"); r.code != 0 {
				t.Errorf("run --shared 2 --wait 0 after a permit came back: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
			}
			stopHolder(t, holders[1])
		})
	}
}

// epochScript records BATON_EPOCH and BATON_TOKEN in file, marks that it
// leads, and holds until SIGTERM (then exits 0).
func epochScript(file string) string {
	return fmt.Sprintf(`trap 'exit 0' TERM; echo "$BATON_EPOCH $BATON_TOKEN" > %q.tmp; mv %q.tmp %q; while :; do sleep 0.05; done`, file, file, file)
}

func readEpoch(t *testing.T, file string) uint64 {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[0] != f[1] {
		t.Fatalf("COMMAND saw BATON_EPOCH BATON_TOKEN = %q, want two equal numbers", b)
	}
	n, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil || n == 0 {
		t.Fatalf("BATON_EPOCH = %q, want a positive decimal (%v)", f[0], err)
	}
	return n
}

// TestElect: of two `baton elect`, one leads and the other waits; when the
// leader's COMMAND exits, the other leads with a larger epoch.
func TestElect(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			url, name, dir := e.url(t), lockName(t), t.TempDir()
			fa, fb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			a := startBaton(t, nil, "elect", "--backend", url, "--ttl", "2", name, "--", "sh", "-c", epochScript(fa))
			waitFile(t, fa, 10*time.Second)
			b := startBaton(t, nil, "elect", "--backend", url, "--ttl", "2", name, "--", "sh", "-c", epochScript(fb))
			q := waitQueue(t, url, name, 2)
			if q[0].Role != "holder" || q[1].Role != "waiting" {
				t.Errorf("inspect of the election = %+v, want the first leading and the second waiting", q)
			}
			if r := runBaton(t, nil, "elect", "--backend", url, "--wait", "0", name, "--", "true"); r.code != 75 {
				t.Errorf("elect --wait 0 with a leader: exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
			}
			if _, err := os.Stat(fb); err == nil {
				t.Fatalf("the second candidate ran while the first led")
			}
			stopHolder(t, a)
			waitFile(t, fb, 10*time.Second)
			ea, eb := readEpoch(t, fa), readEpoch(t, fb)
			if eb <= ea {
				t.Errorf("epochs: first leader %d, second %d; want the second larger", ea, eb)
			}
			stopHolder(t, b)
		})
	}
}

// TestElectStatus: elect exits with COMMAND's status after resigning, so
// the next campaign wins at once.
func TestElectStatus(t *testing.T) {
	url, name := etcdURL(t), lockName(t)
	if r := runBaton(t, nil, "elect", "--backend", url, name, "--", "sh", "-c", "exit 3"); r.code != 3 {
		t.Errorf("elect sh -c 'exit 3': exit = %d, want 3; stderr:\n%s", r.code, r.stderr)
	}
	if r := runBaton(t, nil, "elect", "--backend", url, "--wait", "0", name, "--", "true"); r.code != 0 {
		t.Errorf("elect --wait 0 after the leader resigned: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
}

// TestElectLoss: a leader whose etcd link goes silent loses leadership;
// COMMAND gets SIGTERM and baton exits 76 although COMMAND exits 0.
func TestElectLoss(t *testing.T) {
	etcdURL(t)
	px, err := faultproxy.Start(etcdSrv.Endpoint)
	if err != nil {
		t.Fatalf("faultproxy.Start() = %v", err)
	}
	t.Cleanup(px.Close)
	mark := filepath.Join(t.TempDir(), "leading")
	p := startBaton(t, nil, "elect", "--backend", "etcd://"+px.Addr, "--ttl", "2", "--grace", "500ms",
		lockName(t), "--", "sh", "-c", holdScript(mark, 0))
	waitFile(t, mark, 10*time.Second)
	if err := px.Blackhole(""); err != nil {
		t.Fatalf("Blackhole() = %v", err)
	}
	r := p.wait(t, 15*time.Second)
	if r.code != 76 {
		t.Errorf("elect after the link went silent: exit = %d, want 76; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "leadership") || !strings.Contains(r.stderr, "lost") {
		t.Errorf("stderr does not report the lost leadership:\n%s", r.stderr)
	}
}
