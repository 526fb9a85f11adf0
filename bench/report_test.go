//go:build bench

package bench_test

import "testing"

// TestRatios is the ratio report (ratioReport): minutes of measurement
// that regenerate README.md and results/*.png. It exists only with the
// bench tag, so that go test ./... (CI) runs the smoke and never a
// report it would have to skip:
//
//	go test -tags bench -run TestRatios -v -timeout 60m
func TestRatios(t *testing.T) { ratioReport(t) }
