package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModuleLayoutDocumented: a nested module's README.md Development
// section describes the module as it is: go.mod requires baton at the
// zero pseudo-version with no replace directive, and the workspace points
// that version at the checkout. (prom's README once described a replace
// directive that did not exist.)
func TestModuleLayoutDocumented(t *testing.T) {
	const zeroVersion = "v0.0.0-00010101000000-000000000000"
	const zero = "github.com/baton-go/baton " + zeroVersion
	work := read(t, "../../go.work")
	for _, mod := range []string{"prom", "otel"} {
		t.Run(mod, func(t *testing.T) {
			gomod, readme := read(t, filepath.Join("../..", mod, "go.mod")), read(t, filepath.Join("../..", mod, "README.md"))
			_, dev, _ := strings.Cut(readme, "## Development")
			if strings.Contains(gomod, "replace") {
				t.Errorf("go.mod has a replace directive; README.md's Development section says it has none")
			}
			if !strings.Contains(gomod, zero) || !strings.Contains(dev, zeroVersion) {
				t.Errorf("go.mod requires %q: %v; the Development section names that version: %v",
					zero, strings.Contains(gomod, zero), strings.Contains(dev, zeroVersion))
			}
			if !strings.Contains(dev, "no replace") || strings.Contains(dev, "replaces `github.com/baton-go/baton`") {
				t.Errorf("Development section does not say go.mod has no replace directive:\n%s", dev)
			}
			if !strings.Contains(work, "./"+mod) || !strings.Contains(work, zero+" => ./") {
				t.Errorf("go.work does not use ./%s and point %s at the checkout, as the Development section says", mod, zero)
			}
		})
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
