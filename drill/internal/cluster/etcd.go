package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/baton-go/baton/faultproxy"
)

// Etcd is a three-member etcd cluster. Raft runs with a 50 ms heartbeat
// and a 500 ms election timeout, so a failover takes about a second and
// leases as short as 1 s are granted as asked.
type Etcd struct {
	Members []*EtcdMember
	dir     string
}

// EtcdMember is one member. Clients dial Front (it counts their
// connections), which forwards through ClientLink (a fault proxy) to the
// member's client port. The other members reach its peer port through
// PeerLink, the fault proxy its advertised peer URL names: faulting
// PeerLink drops everything the member sends its peers (they read its
// messages from connections they opened to it) and every request they send
// it; the connections the member itself opened to its peers are not cut.
type EtcdMember struct {
	*Proc
	Client     string // the member's own client address (no proxy)
	Front      *Front
	ClientLink *faultproxy.Proxy
	PeerLink   *faultproxy.Proxy
}

// StartEtcd starts the cluster with client ports base, base+1, base+2 and
// peer ports base+3 … base+5, data under dir, and waits for a leader.
func StartEtcd(bin, dir string, base int) (_ *Etcd, err error) {
	c := &Etcd{dir: dir}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	var initial []string
	for i := range 3 {
		name := fmt.Sprintf("m%d", i+1)
		m := &EtcdMember{Client: fmt.Sprintf("127.0.0.1:%d", base+i)}
		peer := fmt.Sprintf("127.0.0.1:%d", base+3+i)
		if m.PeerLink, err = faultproxy.Start(peer); err != nil {
			return nil, err
		}
		if m.ClientLink, err = faultproxy.Start(m.Client); err != nil {
			return nil, err
		}
		if m.Front, err = StartFront(m.ClientLink.Addr); err != nil {
			return nil, err
		}
		m.Proc = newProc(name, dir, bin,
			"--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", "http://"+m.Client, "--advertise-client-urls", "http://"+m.Client,
			"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+m.PeerLink.Addr,
			"--initial-cluster-state", "new", "--initial-cluster-token", filepath.Base(dir),
			"--heartbeat-interval", "50", "--election-timeout", "500", "--logger", "zap", "--log-level", "warn")
		initial = append(initial, name+"=http://"+m.PeerLink.Addr)
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		m.args = append(m.args, "--initial-cluster", strings.Join(initial, ","))
		if err := m.Start(); err != nil {
			return nil, err
		}
	}
	for _, m := range c.Members {
		if err := waitPort(m.Client, 30*time.Second); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.WaitLeader(ctx, -1); err != nil {
		return nil, err
	}
	return c, nil
}

// Endpoints returns the members' fronts, rotated by k: a client given
// Endpoints(k) starts on member k mod 3.
func (c *Etcd) Endpoints(k int) []string {
	var es []string
	for i := range c.Members {
		es = append(es, c.Members[(k+i)%len(c.Members)].Front.Addr)
	}
	return es
}

// Accepts sums the connections clients opened to every member's front.
func (c *Etcd) Accepts() int64 {
	var n int64
	for _, m := range c.Members {
		n += m.Front.Accepts()
	}
	return n
}

// Status asks member i directly (not through its proxies) for its view:
// the leader it follows (0: none) and its own ID.
func (c *Etcd) Status(ctx context.Context, i int) (leader, self uint64, err error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[i].Client}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, 0, err
	}
	defer cli.Close()
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := cli.Status(sctx, c.Members[i].Client)
	if err != nil {
		return 0, 0, err
	}
	return st.Leader, st.Header.MemberId, nil
}

// WaitLeader waits until the running members other than skip (-1: none)
// agree on a leader among them, and returns its index.
func (c *Etcd) WaitLeader(ctx context.Context, skip int) (int, error) {
	for {
		if i, ok := c.leader(ctx, skip); ok {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("cluster: no agreed etcd leader: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Etcd) leader(ctx context.Context, skip int) (int, bool) {
	ids := map[uint64]int{}
	var agreed uint64
	for i, m := range c.Members {
		if i == skip || !m.Running() {
			continue
		}
		l, self, err := c.Status(ctx, i)
		if err != nil || l == 0 || (agreed != 0 && l != agreed) {
			return -1, false
		}
		agreed, ids[self] = l, i
	}
	i, ok := ids[agreed]
	return i, ok
}

// Close kills every member, stops the proxies and removes the data.
func (c *Etcd) Close() {
	for _, m := range c.Members {
		if m.Proc != nil {
			m.Kill()
		}
		for _, p := range []*faultproxy.Proxy{m.PeerLink, m.ClientLink} {
			if p != nil {
				p.Close()
			}
		}
		if m.Front != nil {
			m.Front.Close()
		}
	}
	_ = os.RemoveAll(c.dir)
}
