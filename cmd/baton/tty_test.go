package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/baton-go/baton/batontest/testenv"
)

// openPTY opens a pseudo-terminal pair (master, slave) with the standard
// library only.
func openPTY(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testenv.Unavailable(t, fmt.Sprintf("no pseudo-terminals: %v", err))
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		m.Close()
		t.Fatalf("TIOCSPTLCK: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		m.Close()
		t.Fatalf("TIOCGPTN: %v", e)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open pts: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// statFields returns pgrp and tpgid of pid from /proc/pid/stat.
func statFields(t *testing.T, pid int) (pgrp, tpgid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("stat of %d: %v", pid, err)
	}
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
	// After "state": ppid pgrp session tty_nr tpgid.
	pgrp, _ = strconv.Atoi(f[2])
	tpgid, _ = strconv.Atoi(f[5])
	return pgrp, tpgid
}

// TestTerminal: with a terminal on stdin, COMMAND's own process group is
// the terminal's foreground group while it runs, and baton takes the
// terminal back (without being stopped by SIGTTOU) when it exits.
func TestTerminal(t *testing.T) {
	url := etcdURL(t)
	master, slave := openPTY(t)
	go func() { // drain the terminal so writes never block; ends at Close
		buf := make([]byte, 4096)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	dir := t.TempDir()
	mark, release := filepath.Join(dir, "pid"), filepath.Join(dir, "release")
	// baton gets a session of its own with the pty as controlling
	// terminal and stdin, as in an interactive shell.
	p := startBatonWith(t, func(c *exec.Cmd) {
		c.Stdin = slave
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}, nil, "run", "--backend", url, lockName(t), "--", "sh", "-c",
		fmt.Sprintf(`echo $$ > %q.tmp; mv %q.tmp %q; while [ ! -e %q ]; do sleep 0.05; done`, mark, mark, mark, release))
	waitFile(t, mark, 10*time.Second)
	b, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("child pid %q: %v", b, err)
	}
	pgrp, tpgid := statFields(t, pid)
	if pgrp != pid {
		t.Errorf("COMMAND pid %d runs in process group %d, want its own", pid, pgrp)
	}
	if tpgid != pgrp {
		t.Errorf("terminal foreground group = %d while COMMAND runs, want COMMAND's group %d", tpgid, pgrp)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := p.wait(t, 10*time.Second)
	if r.code != 0 {
		t.Errorf("run with a terminal: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
}
