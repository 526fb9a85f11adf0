// Package embedetcd runs a real etcd server in-process (etcd's embed
// package) on free loopback ports, so that `baton demo` needs no setup. It
// is a server, not a fake: clients talk gRPC to it over TCP.
//
// It belongs to the CLI's module, the only shipped program that embeds a
// server: library users' module graphs never contain etcd's server. It
// imports nothing of package testing, so the binary links none of it; the
// CLI's tests use it too.
package embedetcd

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// readyTimeout bounds the wait for a fresh member to serve: a single member
// elects itself within a second or two even on a loaded machine.
const readyTimeout = 30 * time.Second

// Server is one embedded etcd member.
type Server struct {
	Endpoint string // "127.0.0.1:port", for clientv3 and fault proxies
	etcd     *embed.Etcd
	dir      string
}

// Start launches a single-member etcd with its data in a fresh temporary
// directory. Close stops it and removes the data.
func Start() (*Server, error) {
	dir, err := os.MkdirTemp("", "baton-etcd-")
	if err != nil {
		return nil, err
	}
	cfg, endpoint, err := config(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(readyTimeout):
		e.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("embedetcd: server not ready after %v", readyTimeout)
	}
	return &Server{Endpoint: endpoint, etcd: e, dir: dir}, nil
}

// config returns a quiet single-member configuration with its data in dir,
// listening on two free loopback ports, and its client endpoint.
func config(dir string) (*embed.Config, string, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cp, pp, err := freePorts()
	if err != nil {
		return nil, "", err
	}
	cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", cp)}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", pp)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	return cfg, cu.Host, nil
}

// Close stops the server and removes its data.
func (s *Server) Close() {
	s.etcd.Close()
	os.RemoveAll(s.dir)
}

// freePorts returns two loopback ports that were free a moment ago. Another
// process may take one before etcd listens; StartEtcd then fails and the
// caller sees the error.
func freePorts() (int, int, error) {
	var ports [2]int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		ls = append(ls, l)
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return 0, 0, errors.New("embedetcd: listener without a TCP address")
		}
		ports[i] = addr.Port
	}
	return ports[0], ports[1], nil
}
