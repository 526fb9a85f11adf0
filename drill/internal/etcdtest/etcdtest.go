// Package etcdtest runs a real etcd server in-process (embed) on free
// loopback ports for the drills. It is a server, not a fake: clients talk
// gRPC to it over TCP. It lives in the drill module, so that only the
// drills' module requires etcd's server; the etcdlock module's tests use
// the private etcd of scripts/servers.sh, `baton demo` its own embedded
// server (cmd/baton/internal/embedetcd).
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

// Server is one embedded etcd member.
type Server struct {
	Endpoint string // "127.0.0.1:port", for clientv3 and the fault proxy
	etcd     *embed.Etcd
	dir      string
}

// Start launches a single-member etcd with its data in a fresh temp dir.
// Close stops it and removes the data.
func Start() (*Server, error) {
	dir, err := os.MkdirTemp("", "baton-etcd-")
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cp, pp, err := freePorts()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", cp))
	pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", pp))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("etcdtest: server not ready after 30s")
	}
	return &Server{Endpoint: cu.Host, etcd: e, dir: dir}, nil
}

// Close stops the server and removes its data.
func (s *Server) Close() {
	s.etcd.Close()
	os.RemoveAll(s.dir)
}

func freePorts() (int, int, error) {
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports[0], ports[1], nil
}

// Main is the TestMain of a test binary that talks to one embedded etcd:
// it starts the server and stores it in *srv, runs the tests, stops the
// server and, when the tests passed, fails the binary if any goroutine
// outlived its owner (I8, docs/faults.md). leakOpts name the few known
// background goroutines goleak should ignore. It does not return.
func Main(m *testing.M, srv **Server, leakOpts ...goleak.Option) {
	s, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdtest: start embedded etcd:", err)
		os.Exit(1)
	}
	*srv = s
	code := m.Run()
	s.Close()
	if code == 0 {
		if err := goleak.Find(leakOpts...); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
