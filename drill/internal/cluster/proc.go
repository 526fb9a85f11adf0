// Package cluster starts real multi-process deployments for the failover
// drills: three etcd members (Debian's etcd-server binary), and a Redis
// primary and replica watched by three Sentinels. Every server is a child
// process of the drill, which kills (SIGKILL), freezes (SIGSTOP) and
// restarts members at will; Close stops them all and removes their data.
// These are the drills' own instances on ports of their own, never the
// shared servers of scripts/servers.sh.
package cluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Proc is one server process. Its methods are for the drill's goroutine
// only (they are not safe for concurrent use).
type Proc struct {
	Name string
	bin  string
	args []string
	log  string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
}

func newProc(name, dir, bin string, args ...string) *Proc {
	return &Proc{Name: name, bin: bin, args: args, log: filepath.Join(dir, name+".log")}
}

// Start runs the process (again, after Kill), its output appended to its
// log file.
func (p *Proc) Start() error {
	if p.Running() {
		return fmt.Errorf("cluster: %s already running", p.Name)
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the drill
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cluster: start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // owner: the process; ends when it exits
	p.cmd, p.done = cmd, done
	return nil
}

// Running reports whether the process was started and has not exited.
func (p *Proc) Running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Signal sends sig (SIGSTOP, SIGCONT) to a running process.
func (p *Proc) Signal(sig syscall.Signal) error {
	if !p.Running() {
		return fmt.Errorf("cluster: %s not running", p.Name)
	}
	return p.cmd.Process.Signal(sig)
}

// Kill ends the process with SIGKILL (after SIGCONT, in case it was
// frozen) and waits for it.
func (p *Proc) Kill() {
	if !p.Running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	<-p.done
}

// waitPort waits until addr accepts connections.
func waitPort(addr string, d time.Duration) error {
	end := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("cluster: %s not listening after %v: %w", addr, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
