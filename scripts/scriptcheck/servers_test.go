package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-go/baton/scripts/scriptcheck/internal/ci"
)

// claim runs servers-lib.sh's claim for port with pidfile in a state
// directory of its own, returning its exit status and standard error.
func claim(t *testing.T, port int, pidfile string) (int, string) {
	t.Helper()
	lib, _ := filepath.Abs("../servers-lib.sh")
	cmd := exec.Command("bash", "-c", `. "$1"; STATE=$2; claim thing "$3" "$4"`, "-", lib, t.TempDir(), fmt.Sprint(port), pidfile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// TestClaim: a server script reuses only a server its own state
// directory started (its pid file names a live process), starts one on a
// free port, and refuses a port that anything else holds, naming the
// process: it once adopted a ZooKeeper with other session-timeout bounds
// that happened to listen on its port, and tests failed far from the
// cause.
func TestClaim(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ours := filepath.Join(t.TempDir(), "pid")
	if err := os.WriteFile(ours, []byte(fmt.Sprintln(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	if rc, _ := claim(t, port, ours); rc != 0 {
		t.Errorf("own server: claim exited %d, want 0 (reuse)", rc)
	}
	rc, msg := claim(t, port, filepath.Join(t.TempDir(), "pid"))
	want := fmt.Sprintf("port %d is held by pid %d", port, os.Getpid())
	if rc != 1 || !strings.Contains(msg, want) {
		t.Errorf("foreign holder: claim exited %d with %q, want 1 and %q", rc, msg, want)
	}
	ln.Close()
	if rc, msg := claim(t, port, ours); rc != 1 || msg != "" {
		t.Errorf("free port: claim exited %d with %q, want 1 (start) and no message", rc, msg)
	}
}

// TestStartNamesASetThatFailed: servers.sh start used to go on when a set
// failed (the Sentinels' binary was missing on a fresh machine) and the
// tests that needed it failed later as "not configured". Now the start
// fails naming the set and prints no environment for it.
func TestStartNamesASetThatFailed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	bin := t.TempDir()
	stub := "#!/bin/sh\necho 'redis-server: broken on purpose' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "redis-server"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "../servers.sh", "start", "redis")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"),
		"BATON_SERVERS_DIR="+t.TempDir(), fmt.Sprintf("BATON_REDIS_PORT=%d", port))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err == nil {
		t.Fatalf("servers.sh start succeeded with a broken redis-server; stdout %q", stdout.String())
	}
	if !strings.Contains(stderr.String(), "did not start: redis") {
		t.Errorf("stderr does not name the set: %q", stderr.String())
	}
	if strings.Contains(stdout.String(), "BATON_TEST_REDIS") {
		t.Errorf("the failed set's environment was printed: %q", stdout.String())
	}
}

// TestStopKeepsOtherStateDirs: stopping the servers of one state
// directory leaves the Redlock files of every other one alone. They all
// used to share one directory under /dev/shm, which a stop emptied.
func TestStopKeepsOtherStateDirs(t *testing.T) {
	shm := fmt.Sprintf("/dev/shm/baton-servers-%d", os.Getuid())
	if err := os.MkdirAll(shm, 0o755); err != nil {
		ci.Unavailable(t, fmt.Sprintf("no /dev/shm here: %v", err))
	}
	other := filepath.Join(shm, fmt.Sprintf("redis-other-%d", os.Getpid()))
	if err := os.WriteFile(other, []byte("another state directory's node"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(other) })
	cmd := exec.Command("bash", "../servers.sh", "stop")
	cmd.Env = append(os.Environ(), "BATON_SERVERS_DIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("servers.sh stop = %v: %s", err, out)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("stopping one state directory removed %s: %v", other, err)
	}
}
