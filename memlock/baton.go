package memlock

import (
	"context"
	"strings"
	"sync"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

func init() { engine.Register(engine.Driver{Open: open, Check: check}, "mem") }

// servers are the process's named servers of mem:// URLs. They live as
// long as the process: a test that needs a server of its own makes one
// with NewServer.
var servers sync.Map // name → *Server

// open serves baton.Open("mem://name"): a new client of the process-wide
// server called name, made at the first Open of that name with the
// options' TTL as its session TTL and their token floor.
func open(_ context.Context, cfg engine.Config) (engine.Conn, error) {
	if err := check(cfg); err != nil {
		return nil, err
	}
	name := strings.Trim(cfg.URL.Rest(), "/")
	v, _ := servers.LoadOrStore(name, sync.OnceValue(func() *Server {
		return NewServer(Options{SessionTTL: cfg.TTL, TokenFloor: cfg.TokenFloor, Observer: cfg.Observer})
	}))
	c := v.(func() *Server)().newClient("")
	c.proc = engine.ProcessData(cfg.Process)
	return connOf(c), nil
}

// check refuses a mem:// URL that names no server.
func check(cfg engine.Config) error {
	name := strings.Trim(cfg.URL.Rest(), "/")
	if name == "" || cfg.URL.HasUser || strings.ContainsAny(name, "?#") {
		return cfg.URL.Badf("want mem://NAME, NAME naming the in-process server")
	}
	return nil
}

// connOf is c as package engine drives it.
func connOf(c *Client) conn {
	return conn{engine.NewRecipes(c.mutex, c.rwMutex, c.semaphore, c.election), c}
}

// conn is a Client as package engine drives it.
type conn struct {
	engine.Recipes
	c *Client
}

func (k conn) Engine() string { return "mem" }
func (k conn) Raw() any       { return k.c }

// Close ends the client's session: its leases are Lost, then its entries
// are deleted. A partitioned client cannot reach the server, so Close
// then only tells its leases; the server expires the session when
// SessionTTL passes, as it would for a crashed process. Later calls return
// baton.ErrClosed. Close always returns nil.
func (k conn) Close() error {
	k.c.shutdown(false)
	return nil
}

// Inspect reads the lock's directory (a semaphore's two) as the server
// holds it; every session there is live, since an expired one's entries
// are gone with it.
func (k conn) Inspect(_ context.Context, name string) (baton.Inspection, error) {
	dir, err := engine.ValidatePath(name)
	if err != nil {
		return baton.Inspection{}, err
	}
	srv := k.c.srv
	srv.mu.Lock()
	defer srv.mu.Unlock()
	var all []queuekit.EntryInfo
	for _, sub := range []string{"", "/locks", "/leases"} {
		d := srv.dirs[dir+sub]
		if d == nil {
			continue
		}
		q := make([]queuekit.EntryInfo, 0, len(d.entries))
		permits := 0
		for _, en := range d.entries {
			if n, ok := queuekit.ParsePermits(en.data); ok {
				permits = n
			}
			q = append(q, queuekit.EntryInfo{
				Entry: strings.TrimPrefix(en.e.Key, dir+"/"), Kind: en.e.Kind,
				Session: en.s.id, Process: engine.ParseProcess(en.proc),
			})
		}
		queuekit.MarkHolders(q, permits)
		all = append(all, q...)
	}
	return queuekit.Inspection(name, "mem", all), nil
}
