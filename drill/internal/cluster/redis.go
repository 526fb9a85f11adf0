package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel is a Redis primary and one replica watched by three Sentinels
// (quorum 2) that call a primary down after 500 ms without an answer, so a
// failover takes one to two seconds.
type Sentinel struct {
	Master    string // the master name the Sentinels watch
	Servers   []*Proc
	Addrs     []string // the servers' addresses: Servers[0] starts as primary
	Sentinels []*Proc
	SentAddrs []string
	dir       string
}

// StartSentinel starts redis-servers on ports[0] (primary) and ports[1]
// (its replica) and Sentinels on sentPorts, data under dir, and waits
// until every Sentinel knows the replica and the other Sentinels.
func StartSentinel(serverBin, sentinelBin, dir, master string, ports, sentPorts []int) (_ *Sentinel, err error) {
	s := &Sentinel{Master: master, dir: dir}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	for i, port := range ports {
		addr := "127.0.0.1:" + strconv.Itoa(port)
		d := filepath.Join(dir, "redis-"+strconv.Itoa(port))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", d, "--save", "", "--appendonly", "no"}
		if i > 0 {
			args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(ports[0]))
		}
		p := newProc("redis-"+strconv.Itoa(port), dir, serverBin, args...)
		if err := p.Start(); err != nil {
			return nil, err
		}
		s.Servers, s.Addrs = append(s.Servers, p), append(s.Addrs, addr)
		if err := waitPort(addr, 10*time.Second); err != nil {
			return nil, err
		}
	}
	for _, port := range sentPorts {
		conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d.conf", port)) // rewritten by the Sentinel
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s %s %d 2\n"+
			"sentinel down-after-milliseconds %s 500\nsentinel failover-timeout %s 3000\n",
			port, dir, master, "127.0.0.1", ports[0], master, master)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, err
		}
		p := newProc(fmt.Sprintf("sentinel-%d", port), dir, sentinelBin, conf)
		if err := p.Start(); err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		s.Sentinels, s.SentAddrs = append(s.Sentinels, p), append(s.SentAddrs, addr)
		if err := waitPort(addr, 10*time.Second); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s, s.waitDiscovered(ctx)
}

// waitDiscovered waits until every Sentinel sees one replica and two
// other Sentinels: before that, a failover could not be agreed on.
func (s *Sentinel) waitDiscovered(ctx context.Context) error {
	for _, a := range s.SentAddrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a})
		defer sc.Close()
		for {
			m, err := sc.Master(ctx, s.Master).Result()
			if err == nil && m["num-slaves"] == "1" && m["num-other-sentinels"] == strconv.Itoa(len(s.SentAddrs)-1) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("cluster: Sentinel %s: replica and peers not discovered (%v, %v): %w", a, m, err, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// Primary returns the primary's address as the first Sentinel reports it.
func (s *Sentinel) Primary(ctx context.Context) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.SentAddrs[0]})
	defer sc.Close()
	a, err := sc.GetMasterAddrByName(ctx, s.Master).Result()
	if err != nil {
		return "", err
	}
	return a[0] + ":" + a[1], nil
}

// WaitPrimary waits until every Sentinel reports want as the primary.
func (s *Sentinel) WaitPrimary(ctx context.Context, want string) error {
	for _, a := range s.SentAddrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a})
		defer sc.Close()
		for {
			r, err := sc.GetMasterAddrByName(ctx, s.Master).Result()
			if err == nil && r[0]+":"+r[1] == want {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("cluster: Sentinel %s does not report %s as primary (%v, %v): %w", a, want, r, err, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// Close kills every process and removes the data.
func (s *Sentinel) Close() {
	for _, p := range append(s.Sentinels, s.Servers...) {
		p.Kill()
	}
	_ = os.RemoveAll(s.dir)
}
