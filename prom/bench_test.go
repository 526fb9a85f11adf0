package batonprom_test

import (
	"testing"

	"github.com/baton-go/baton/internal/obsview/obsviewtest"
	batonprom "github.com/baton-go/baton/prom"
)

// BenchmarkLeaseCycle measures the events of one uncontended lease:
// started, granted, released.
func BenchmarkLeaseCycle(b *testing.B) {
	obsviewtest.BenchLeaseCycle(b, batonprom.New(batonprom.Options{}))
}
