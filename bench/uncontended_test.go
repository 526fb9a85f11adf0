package bench_test

import (
	"context"
	"testing"
	"time"
)

// rigMakers builds each engine's rig; ZooKeeper skips (or fails under CI)
// without a server.
var rigMakers = []struct {
	engine string
	make   func(testing.TB) *rig
}{{"zk", newZKRig}, {"etcd", newEtcdRig}}

// TestSmoke checks that every measured operation really locks and unlocks:
// after lock its name has exactly one entry (and a baton lease is Held with
// a token), after unlock none. It runs by default and quickly.
func TestSmoke(t *testing.T) {
	for _, mk := range rigMakers {
		t.Run(mk.engine, func(t *testing.T) { smokeRig(t, mk.make(t)) })
	}
}

func smokeRig(t *testing.T, r *rig) {
	for _, p := range r.pairs {
		t.Run(p.impl, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			for i := range 2 {
				if err := p.lock(ctx); err != nil {
					t.Fatalf("%s lock #%d = %v, want nil", p.what, i, err)
				}
				if p.check != nil {
					if err := p.check(); err != nil {
						t.Errorf("%s after lock #%d: %v", p.what, i, err)
					}
				}
				if p.entries != nil { // nil: a floor that holds nothing (PINGs)
					if n, err := p.entries(ctx); err != nil || n != 1 {
						t.Errorf("%s entries after lock #%d = %d, %v; want 1, nil", p.what, i, n, err)
					}
				}
				if err := p.unlock(ctx); err != nil {
					t.Fatalf("%s unlock #%d = %v, want nil", p.what, i, err)
				}
				if p.entries != nil {
					if n, err := p.entries(ctx); err != nil || n != 0 {
						t.Errorf("%s entries after unlock #%d = %d, %v; want 0, nil", p.what, i, n, err)
					}
				}
			}
		})
	}
}

// BenchmarkUncontended times lock+unlock of each implementation and
// reports the server requests per operation (req/op; for ZooKeeper it is
// the whole server's packet count, pings and other clients included).
func BenchmarkUncontended(b *testing.B) {
	for _, mk := range rigMakers {
		b.Run(mk.engine, func(b *testing.B) { benchRig(b, mk.make(b)) })
	}
}

func benchRig(b *testing.B, r *rig) {
	for _, p := range r.pairs {
		b.Run(p.impl, func(b *testing.B) {
			before, err := r.requests()
			if err != nil {
				b.Fatalf("request count: %v", err)
			}
			if err := loop(b, p); err != nil {
				b.Fatal(err)
			}
			after, err := r.requests()
			if err != nil {
				b.Fatalf("request count: %v", err)
			}
			b.ReportMetric(float64(after-before)/float64(b.N), "req/op")
		})
	}
}

// loop runs lock+unlock b.N times. It reports the process's CPU time per
// op ("cpu-ns/op": user and system, every goroutine of the process, so
// the clients' own background work is in it) and, for a pair that can
// read it, the server's ("srv-ns/op"): with the wire's round trips equal,
// these two say whether a gap is the client's work or the server's.
func loop(b *testing.B, p *pair) error {
	ctx := context.Background()
	srv0, err := p.serverCPU(ctx)
	if err != nil {
		return err
	}
	cpu0 := processCPU()
	for b.Loop() {
		if err := p.lock(ctx); err != nil {
			return err
		}
		if err := p.unlock(ctx); err != nil {
			return err
		}
	}
	cpu := processCPU() - cpu0
	srv, err := p.serverCPU(ctx)
	if err != nil {
		return err
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	if p.server != nil {
		b.ReportMetric(float64(srv-srv0)/float64(b.N), "srv-ns/op")
	}
	return nil
}
