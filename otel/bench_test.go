package batonotel_test

import (
	"testing"

	batonotel "github.com/baton-go/baton/otel"
	"github.com/baton-go/baton/testkit/obsviewtest"
)

// BenchmarkLeaseCycle measures the events of one uncontended lease:
// started, granted, released, on the global (no-op) providers.
func BenchmarkLeaseCycle(b *testing.B) {
	o, err := batonotel.New(batonotel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	obsviewtest.BenchLeaseCycle(b, o)
}
