package main_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/go-zookeeper/zk"
)

// zkConn is a raw go-zookeeper session, to make by hand what a buggy or
// unlucky client leaves in a lock directory.
func zkConn(t *testing.T) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{testenv.ZK(t)}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("zk.Connect() = %v", err)
	}
	t.Cleanup(conn.Close)
	deadline := time.Now().Add(10 * time.Second)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("no ZooKeeper session within 10s (state %v)", conn.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return conn
}

// mkdirs creates path's missing nodes as containers, as baton does.
func mkdirs(t *testing.T, conn *zk.Conn, path string) {
	t.Helper()
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		if _, err := conn.CreateContainer(path[:i], nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("CreateContainer(%q) = %v", path[:i], err)
		}
	}
}

func children(t *testing.T, conn *zk.Conn, dir string) []string {
	t.Helper()
	kids, _, err := conn.Children(dir)
	if err != nil {
		t.Fatalf("Children(%q) = %v", dir, err)
	}
	slices.Sort(kids)
	return kids
}

// TestCleanZK: a protected-create duplicate (two "_c_<uuid>-lock-" nodes of
// one session) and a persistent entry no session owns are flagged by
// inspect, listed by the dry run without being touched, and removed by
// --apply, which keeps the smallest of the duplicates; the directory can
// never be named for removal.
func TestCleanZK(t *testing.T) {
	url, name := zkURL(t), lockName(t)
	conn := zkConn(t)
	dir := "/baton-cli-test/" + name
	mkdirs(t, conn, dir)
	const uuid = "0f1e2d3c-4b5a-4697-8877-665544332211"
	acl := zk.WorldACL(zk.PermAll)
	var made []string
	for range 2 {
		p, err := conn.Create(dir+"/_c_"+uuid+"-lock-", nil, zk.FlagEphemeralSequential, acl)
		if err != nil {
			t.Fatalf("Create = %v", err)
		}
		made = append(made, p[len(dir)+1:])
	}
	orig, dup := made[0], made[1]
	p, err := conn.Create(dir+"/_c_ffffffff-0000-4000-8000-000000000000-lock-", nil, zk.FlagSequence, acl)
	if err != nil {
		t.Fatalf("Create(persistent) = %v", err)
	}
	persistent := p[len(dir)+1:]
	t.Cleanup(func() { _ = conn.Delete(dir+"/"+persistent, -1) })

	q := inspect(t, url, name)
	flags := map[string]inspectEntry{}
	for _, e := range q {
		flags[e.Owner] = e
	}
	if e := flags[orig]; e.Duplicate || e.Dead || e.Role != "holder" {
		t.Errorf("inspect %s = %+v, want the live holder, unflagged", orig, e)
	}
	if e := flags[dup]; !e.Duplicate || e.Dead || !strings.Contains(e.Note, "duplicate of "+orig+" (same prefix, same session)") {
		t.Errorf("inspect %s = %+v, want a duplicate of %s's same live session", dup, e, orig)
	}
	if e := flags[persistent]; !e.Dead || !strings.Contains(e.Note, "no session owns it") {
		t.Errorf("inspect %s = %+v, want dead, owned by no session", persistent, e)
	}

	r := runBaton(t, nil, "clean", "--backend", url, name)
	if r.code != 0 {
		t.Fatalf("clean (dry run) exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"would remove " + dup, "would remove " + persistent, "dry run"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("clean dry run does not say %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, orig) {
		t.Errorf("clean dry run mentions the smallest entry %s:\n%s", orig, r.stdout)
	}
	if got := children(t, conn, dir); len(got) != 3 {
		t.Errorf("after the dry run the directory holds %v, want all 3 entries", got)
	}

	for _, bad := range []string{"", "/", name, "/baton-cli-test/" + name, "leases"} {
		r := runBaton(t, nil, "clean", "--backend", url, "--apply", "--force-release", bad, name)
		if r.code != 64 || !strings.Contains(r.stderr, "directory") {
			t.Errorf("clean --apply --force-release %q exit = %d, want 64 and a refusal; stderr:\n%s", bad, r.code, r.stderr)
		}
	}

	r = runBaton(t, nil, "clean", "--backend", url, "--apply", name)
	if r.code != 0 {
		t.Fatalf("clean --apply exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	if got := children(t, conn, dir); !slices.Equal(got, []string{orig}) {
		t.Errorf("after clean --apply the directory holds %v, want only %s", got, orig)
	}
}

// evidenceFile is the part of clean's evidence the test checks.
type evidenceFile struct {
	Lock       string        `json:"lock"`
	Entry      evidenceEntry `json:"entry"`
	FenceToken *uint64       `json:"fence_token"`
	FenceExact bool          `json:"fence_token_exact"`
	Queue      []evidenceEntry
}

// evidenceEntry is a queue entry of clean's evidence.
type evidenceEntry struct {
	Entry   string `json:"entry"`
	Session string `json:"session"`
	Holder  bool   `json:"holder"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Program string `json:"program"`
}

// TestForceRelease: a live holder is released only with its exact entry
// and --apply; the dry run changes nothing; --apply saves the evidence
// (entry, session, the fence token to raise) before it removes the entry.
func TestForceRelease(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			url, name := e.url(t), lockName(t)
			mark := filepath.Join(t.TempDir(), "holding")
			h := startBaton(t, nil, "run", "--backend", url, "--ttl", "2", name, "--", "sh", "-c", holdScript(mark, 0))
			waitFile(t, mark, 10*time.Second)
			q := inspect(t, url, name)
			if len(q) != 1 || q[0].Role != "holder" {
				t.Fatalf("inspect = %+v, want one holder", q)
			}
			entry := q[0].Owner // a queue entry's owner is its name
			evdir := t.TempDir()

			for _, bad := range []string{entry + "0", entry[:len(entry)-1]} {
				r := runBaton(t, nil, "clean", "--backend", url, "--apply", "--evidence-dir", evdir, "--force-release", bad, name)
				if r.code != 66 {
					t.Errorf("clean --force-release %q (not an entry) exit = %d, want 66; stderr:\n%s", bad, r.code, r.stderr)
				}
			}
			r := runBaton(t, nil, "clean", "--backend", url, "--evidence-dir", evdir, "--force-release", entry, name)
			if r.code != 0 || !strings.Contains(r.stdout, "raise the fence") || !strings.Contains(r.stdout, "dry run") {
				t.Errorf("clean --force-release without --apply: exit %d, stdout:\n%s\nwant 0, the fence advice and a dry run", r.code, r.stdout)
			}
			if q := inspect(t, url, name); len(q) != 1 || q[0].Owner != entry {
				t.Fatalf("after the dry run inspect = %+v, want %s still there", q, entry)
			}
			if files, _ := os.ReadDir(evdir); len(files) != 0 {
				t.Errorf("the dry run saved evidence: %v", files)
			}

			r = runBaton(t, nil, "clean", "--backend", url, "--apply", "--evidence-dir", evdir, "--force-release", entry, name)
			if r.code != 0 {
				t.Fatalf("clean --apply --force-release exit = %d, want 0; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			files, err := filepath.Glob(filepath.Join(evdir, "baton-evidence-*.json"))
			if err != nil || len(files) != 1 {
				t.Fatalf("evidence files = %v, %v; want one", files, err)
			}
			if !strings.Contains(r.stdout, files[0]) {
				t.Errorf("clean does not print the evidence path %s:\n%s", files[0], r.stdout)
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var ev evidenceFile
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Fatalf("evidence %s: %v\n%s", files[0], err, b)
			}
			if ev.Lock != name || ev.Entry.Entry != entry || ev.Entry.Session == "" || !ev.Entry.Holder || len(ev.Queue) != 1 {
				t.Errorf("evidence = %+v, want lock %s, holder entry %s with its session and the queue", ev, name, entry)
			}
			if ev.Entry.PID != h.cmd.Process.Pid || ev.Entry.Host != q[0].Host || ev.Entry.Program != "sh" {
				t.Errorf("evidence entry = %+v, want the holder's process: pid %d, host %q, program sh", ev.Entry, h.cmd.Process.Pid, q[0].Host)
			}
			switch {
			case ev.FenceToken == nil || *ev.FenceToken == 0:
				t.Errorf("evidence fence_token = nil/0, want the token to raise the fence to")
			case e.name == "etcd" && (!ev.FenceExact || q[0].Token == nil || *ev.FenceToken != *q[0].Token):
				t.Errorf("etcd evidence fence_token = %d (exact %v), want the holder's token %v", *ev.FenceToken, ev.FenceExact, q[0].Token)
			}
			if q := inspect(t, url, name); len(q) != 0 {
				t.Errorf("after the forced release inspect = %+v, want an empty queue", q)
			}
			stopHolder(t, h)
		})
	}
}
