package batonprom_test

import (
	"testing"

	batonprom "github.com/baton-go/baton/prom"
	"github.com/baton-go/baton/testkit/obsviewtest"
)

// BenchmarkLeaseCycle measures the events of one uncontended lease:
// started, granted, released.
func BenchmarkLeaseCycle(b *testing.B) {
	obsviewtest.BenchLeaseCycle(b, batonprom.New(batonprom.Options{}))
}
