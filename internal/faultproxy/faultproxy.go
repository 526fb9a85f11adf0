// Package faultproxy is an embedded TCP fault proxy for baton's drills,
// built on toxiproxy's proxy core running in-process (no toxiproxy server,
// no HTTP API). A test points a client at Proxy.Addr instead of the server
// and injects faults at the transport: blackholes, latency, lost responses,
// resets and refused connections. The server stays real.
package faultproxy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Direction picks the stream a fault applies to.
type Direction string

const (
	// Upstream is client→server.
	Upstream Direction = "upstream"
	// Downstream is server→client (responses).
	Downstream Direction = "downstream"
)

var (
	apiOnce sync.Once
	api     *toxiproxy.ApiServer
	seq     int
	seqMu   sync.Mutex
)

// Proxy forwards one listening address to one upstream server.
type Proxy struct {
	// Addr is the loopback address clients dial instead of the server.
	Addr string
	p    *toxiproxy.Proxy
	mu   sync.Mutex
}

// Start opens a proxy on a free loopback port forwarding to upstream
// ("host:port").
func Start(upstream string) (*Proxy, error) {
	apiOnce.Do(func() {
		api = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	})
	seqMu.Lock()
	seq++
	name := fmt.Sprintf("baton-%d", seq)
	seqMu.Unlock()
	p := toxiproxy.NewProxy(api, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("faultproxy: start %s: %w", upstream, err)
	}
	return &Proxy{Addr: p.Listen, p: p}, nil
}

// Close stops the proxy and cuts its connections.
func (p *Proxy) Close() { p.p.Stop() }

func (p *Proxy) add(name, typ string, dir Direction, attrs string) error {
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, typ, dir, attrs)
	_, err := p.p.Toxics.AddToxicJson(strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("faultproxy: add %s: %w", name, err)
	}
	return nil
}

// Blackhole silently drops every byte in dir (both when dir is ""), keeping
// connections open: a partition that neither side sees as a close.
func (p *Proxy) Blackhole(dir Direction) error {
	for _, d := range dirs(dir) {
		if err := p.add("blackhole_"+string(d), "timeout", d, `{"timeout":0}`); err != nil {
			return err
		}
	}
	return nil
}

// Latency delays every chunk in dir (both when "") by d ± jitter.
func (p *Proxy) Latency(dir Direction, d, jitter time.Duration) error {
	for _, x := range dirs(dir) {
		attrs := fmt.Sprintf(`{"latency":%d,"jitter":%d}`, d.Milliseconds(), jitter.Milliseconds())
		if err := p.add("latency_"+string(x), "latency", x, attrs); err != nil {
			return err
		}
	}
	return nil
}

// CutAfter lets n more bytes through in dir and then closes the
// connection (toxiproxy limit_data). CutAfter(Downstream, 0) right before
// a request loses its response while the server still applies it.
func (p *Proxy) CutAfter(dir Direction, n int64) error {
	return p.add("limit_"+string(dir), "limit_data", dir, fmt.Sprintf(`{"bytes":%d}`, n))
}

// ResetPeer closes connections with a TCP RST after timeout (0: at once).
func (p *Proxy) ResetPeer(timeout time.Duration) error {
	return p.add("reset_peer", "reset_peer", Downstream, fmt.Sprintf(`{"timeout":%d}`, timeout.Milliseconds()))
}

// Heal removes every fault.
func (p *Proxy) Heal() {
	p.p.Toxics.ResetToxics(context.Background())
}

// Refuse stops listening and cuts every connection, so new dials are
// refused, as when the server is down.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.p.Stop()
}

// Accept listens again on the same address after Refuse.
func (p *Proxy) Accept() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.p.Start()
}

func dirs(d Direction) []Direction {
	if d == "" {
		return []Direction{Upstream, Downstream}
	}
	return []Direction{d}
}
