package memlock_test

import (
	"context"
	"testing"

	"github.com/baton-go/baton/memlock"
)

// BenchmarkMutexLockUnlock measures one uncontended Lock and Release on
// the in-memory engine: the path on which an Observer must cost nothing
// when it is nil.
func BenchmarkMutexLockUnlock(b *testing.B) {
	for _, c := range []struct{ name string }{{"nil"}} {
		b.Run(c.name, func(b *testing.B) {
			srv := memlock.NewServer(memlock.Options{})
			defer srv.Close()
			m, err := srv.Client("bench").Mutex("bench/lock")
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := m.Lock(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
