package redislock

import (
	"slices"
	"testing"

	"github.com/baton-go/baton/engine/leasekit"
)

// TestSpecKeys: the keys packed into one string (packKeys) are the
// layout's, as keysOf spells it, for every kind and for names that need
// escaping; the boxes point at them.
func TestSpecKeys(t *testing.T) {
	c := &Client{o: Options{Prefix: "p:x"}}
	for _, name := range []string{"a", "order/42", "x{y}%z", "ünï"} {
		k := c.keysOf(name)
		b := k.base
		want := map[leasekit.Kind][]string{
			leasekit.KindMutex:  {b + sfxMutex, b + sfxMutexWaiters, k.counter},
			leasekit.KindLeader: {b + sfxElect, b + sfxElectWaiters, k.counter},
			leasekit.KindPermit: {b + sfxSemPermits, b + sfxSemN, b + sfxSemWaiters, k.counter, b + sfxSemProcs},
			leasekit.KindWrite:  {b + sfxRWWrite, b + sfxRWReaders, b + sfxRWQueue, b + sfxRWOrder, b + sfxRWSeq, k.counter, b + sfxRWProcs},
			leasekit.KindRead:   {b + sfxRWWrite, b + sfxRWReaders, b + sfxRWQueue, b + sfxRWOrder, b + sfxRWSeq, k.counter, b + sfxRWProcs},
		}
		for kind, keys := range want {
			s := c.specFor(&leasekit.Request{Name: name, Kind: kind, N: 2})
			if !slices.Equal(s.keys, keys) || s.wake != k.wake {
				t.Errorf("%q kind %v: keys %q, wake %q; want %q, %q", name, kind, s.keys, s.wake, keys, k.wake)
			}
			for i, bx := range s.boxed {
				if p, ok := bx.(*string); !ok || *p != keys[i] {
					t.Errorf("%q kind %v: box %d = %v, want a pointer to %q", name, kind, i, bx, keys[i])
				}
			}
			if got := s.aux.keys[0]; got != keys[s.zsetKey] {
				t.Errorf("%q kind %v: the release's key %q, want %q", name, kind, got, keys[s.zsetKey])
			}
		}
	}
}
