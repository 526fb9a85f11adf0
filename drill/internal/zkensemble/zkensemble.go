// Package zkensemble runs a private three-member ZooKeeper ensemble (three
// JVMs of Debian's zookeeper) for the failover drills, which kill, freeze
// and partition its members. Every link between members goes through a
// fault proxy: member i's zoo.cfg names, for each peer j, the addresses of
// proxies forwarding to j's quorum and election ports, so a member can be
// cut from its peers without touching the others' links. Clients reach a
// member through its client proxy (Member.Client).
//
// The ensemble is never the one of scripts/servers.d: the drills break it.
package zkensemble

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/baton-go/baton/faultproxy"
)

// Config sets the ensemble's ports and clock.
type Config struct {
	// BasePort is the first of nine loopback ports: three client ports,
	// then each member's quorum and election ports.
	BasePort int
	// Tick is ZooKeeper's tickTime. syncLimit is 10 ticks: a follower
	// that hears nothing from its leader for that long (and a leader
	// that hears no quorum) gives up and elects again.
	Tick time.Duration
	// Dir holds the members' data, configurations and logs.
	Dir string
}

// Ensemble is a running three-member ensemble.
type Ensemble struct {
	cfg     Config
	members []*Member
	// peer[i][j] are member i's proxies to member j's quorum (0) and
	// election (1) ports; nil on the diagonal.
	peer [3][3][2]*faultproxy.Proxy
}

// Member is one ZooKeeper server of the ensemble.
type Member struct {
	ID     int    // 1, 2 or 3, its myid
	Addr   string // its own client address
	Client *faultproxy.Proxy

	dir string
	cfg string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start writes the configurations and starts the three members; it
// returns once each serves as leader or follower, or fails within
// timeout.
func Start(cfg Config, timeout time.Duration) (*Ensemble, error) {
	e := &Ensemble{cfg: cfg}
	ok := false
	defer func() {
		if !ok {
			e.Close()
		}
	}()
	for i := range 3 {
		m := &Member{ID: i + 1, Addr: fmt.Sprintf("127.0.0.1:%d", cfg.BasePort+i), dir: filepath.Join(cfg.Dir, fmt.Sprint(i+1))}
		p, err := faultproxy.Start(m.Addr)
		if err != nil {
			return nil, err
		}
		m.Client = p
		e.members = append(e.members, m)
	}
	for i := range 3 {
		for j := range 3 {
			if i == j {
				continue
			}
			for k := range 2 {
				p, err := faultproxy.Start(e.peerAddr(j, k))
				if err != nil {
					return nil, err
				}
				e.peer[i][j][k] = p
			}
		}
	}
	for i, m := range e.members {
		if err := e.configure(i, m); err != nil {
			return nil, err
		}
		if err := m.start(); err != nil {
			return nil, err
		}
	}
	if _, err := e.Serving(timeout); err != nil {
		return nil, err
	}
	ok = true
	return e, nil
}

// peerAddr is member j's own quorum (k=0) or election (k=1) address.
func (e *Ensemble) peerAddr(j, k int) string {
	return fmt.Sprintf("127.0.0.1:%d", e.cfg.BasePort+3+2*j+k)
}

// configure writes member i's myid and zoo.cfg: its own line with its
// real ports (it binds them), its peers' lines with its proxies to them.
func (e *Ensemble) configure(i int, m *Member) error {
	if err := os.MkdirAll(filepath.Join(m.dir, "data"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(m.dir, "data", "myid"), []byte(fmt.Sprintln(m.ID)), 0o644); err != nil {
		return err
	}
	tick := e.cfg.Tick.Milliseconds()
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=10\nsyncLimit=10\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n",
		tick, filepath.Join(m.dir, "data"), e.cfg.BasePort+i)
	fmt.Fprintf(&b, "maxClientCnxns=0\nminSessionTimeout=%d\nmaxSessionTimeout=60000\n4lw.commands.whitelist=*\nadmin.enableServer=false\n", 2*tick)
	// No fsync per transaction: on a loaded shared disk one can stall for
	// longer than a session, and a session's pings are answered behind
	// its writes. A SIGKILLed member loses nothing by it: the kernel keeps
	// what the process wrote.
	b.WriteString("forceSync=no\n")
	for j := range 3 {
		q, el := e.peerAddr(j, 0), e.peerAddr(j, 1)
		if j != i {
			q, el = e.peer[i][j][0].Addr, e.peer[i][j][1].Addr
		}
		fmt.Fprintf(&b, "server.%d=%s:%s\n", j+1, q, portOf(el))
	}
	m.cfg = filepath.Join(m.dir, "zoo.cfg")
	return os.WriteFile(m.cfg, []byte(b.String()), 0o644)
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// Members returns the three members, by ID.
func (e *Ensemble) Members() []*Member { return e.members }

// Addrs returns the members' client proxies' addresses.
func (e *Ensemble) Addrs() []string {
	var as []string
	for _, m := range e.members {
		as = append(as, m.Client.Addr)
	}
	return as
}

// Partition blackholes every link of m: its clients' connections and its
// quorum and election links in both directions (the bytes are dropped,
// the connections stay open, as across a partition).
func (e *Ensemble) Partition(m *Member) error {
	if err := m.Client.Blackhole(""); err != nil {
		return err
	}
	i := m.ID - 1
	for j := range 3 {
		if j == i {
			continue
		}
		for k := range 2 {
			for _, p := range []*faultproxy.Proxy{e.peer[i][j][k], e.peer[j][i][k]} {
				if err := p.Blackhole(""); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Heal heals every proxy (cutting the connections a blackhole covered),
// resumes frozen members and restarts dead ones, then waits until the
// three serve.
func (e *Ensemble) Heal(timeout time.Duration) error {
	for _, m := range e.members {
		m.Client.Heal()
	}
	for i := range 3 {
		for j := range 3 {
			for _, p := range e.peer[i][j] {
				if p != nil {
					p.Heal()
				}
			}
		}
	}
	for _, m := range e.members {
		if err := m.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return err
		}
		if !m.Running() {
			if err := m.start(); err != nil {
				return err
			}
		}
	}
	_, err := e.Serving(timeout)
	return err
}

// Serving waits until every member serves, exactly one as leader, and
// returns the leader.
func (e *Ensemble) Serving(timeout time.Duration) (*Member, error) {
	deadline := time.Now().Add(timeout)
	for {
		leader, modes := e.modes()
		if leader != nil {
			return leader, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("zkensemble: members not serving after %v: modes %v", timeout, modes)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Leader returns the member that serves as leader now, or nil: it need
// not have every member behind it.
func (e *Ensemble) Leader() *Member {
	for _, m := range e.members {
		if m.Mode() == "leader" {
			return m
		}
	}
	return nil
}

// modes returns the leader when all three serve with exactly one leader,
// and each member's mode.
func (e *Ensemble) modes() (*Member, []string) {
	var leader *Member
	leaders, followers := 0, 0
	modes := make([]string, len(e.members))
	for i, m := range e.members {
		modes[i] = m.Mode()
		switch modes[i] {
		case "leader":
			leader = m
			leaders++
		case "follower":
			followers++
		}
	}
	if leaders == 1 && followers == len(e.members)-1 {
		return leader, modes
	}
	return nil, modes
}

// Close stops the members and the proxies.
func (e *Ensemble) Close() {
	for _, m := range e.members {
		m.Kill()
		m.Client.Close()
	}
	for i := range 3 {
		for j := range 3 {
			for _, p := range e.peer[i][j] {
				if p != nil {
					p.Close()
				}
			}
		}
	}
}

// start launches the member's JVM.
func (m *Member) start() error {
	java, err := exec.LookPath("java")
	if err != nil {
		return fmt.Errorf("zkensemble: java: %w", err)
	}
	log, err := os.OpenFile(filepath.Join(m.dir, "zk.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(java, "-Xmx256m", "-Dzookeeper.admin.enableServer=false", "-Dznode.container.checkIntervalMs=500",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath(),
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", m.cfg)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("zkensemble: start member %d: %w", m.ID, err)
	}
	done := make(chan struct{})
	go func() { // owner: the member; ends when the JVM exits (Kill)
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	m.mu.Lock()
	m.cmd, m.done = cmd, done
	m.mu.Unlock()
	return nil
}

// classpath is the one of scripts/servers.sh's zk_classpath.
func classpath() string {
	cp := "/etc/zookeeper/conf"
	for _, j := range []string{"zookeeper", "zookeeper-jute", "netty-handler", "netty-common", "netty-buffer", "netty-transport",
		"netty-resolver", "netty-codec", "netty-transport-native-epoll", "netty-transport-native-unix-common",
		"slf4j-api", "slf4j-simple", "commons-cli", "commons-io", "metrics-core", "snappy-java", "jline"} {
		if p := "/usr/share/java/" + j + ".jar"; fileExists(p) {
			cp += ":" + p
		}
	}
	return cp
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Running reports whether the member's JVM is alive (frozen counts).
func (m *Member) Running() bool {
	m.mu.Lock()
	done := m.done
	m.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL and waits for the JVM to exit; its sockets are
// closed by the kernel, so peers and clients see the connections end.
func (m *Member) Kill() {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Kill()
	<-done
}

// Signal sends sig to the member's JVM. After SIGSTOP it returns once the
// process is stopped: a signal is delivered asynchronously, and a process
// not stopped yet may still answer.
func (m *Member) Signal(sig syscall.Signal) error {
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if cmd == nil || !m.Running() {
		return os.ErrProcessDone
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return err
	}
	if sig != syscall.SIGSTOP {
		return nil
	}
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			return err
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			return nil
		}
	}
	return fmt.Errorf("zkensemble: member %d not stopped a second after SIGSTOP", m.ID)
}

// Mode returns the member's role from its srvr answer: "leader",
// "follower", or "" when it does not serve (electing, frozen, dead).
func (m *Member) Mode() string {
	out, err := FourLetterWord(m.Addr, "srvr", 300*time.Millisecond)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(out, "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode)
		}
	}
	return ""
}

// FourLetterWord sends a ZooKeeper four-letter command and returns the
// answer.
func FourLetterWord(addr, word string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}
