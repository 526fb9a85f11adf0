package batonotel_test

import (
	"os"
	"strings"
	"testing"
)

// TestModuleLayoutDocumented: README.md's Development section describes
// the module as it is: go.mod requires baton at the zero pseudo-version
// with no replace directive, and the workspace points that version at the
// checkout.
func TestModuleLayoutDocumented(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const zero = "github.com/baton-go/baton v0.0.0-00010101000000-000000000000"
	mod, readme := read("go.mod"), read("README.md")
	_, dev, _ := strings.Cut(readme, "## Development")
	if strings.Contains(mod, "replace") {
		t.Errorf("go.mod has a replace directive; README.md's Development section says it has none")
	}
	if !strings.Contains(mod, zero) || !strings.Contains(dev, "v0.0.0-00010101000000-000000000000") {
		t.Errorf("go.mod requires %q: %v; the Development section names that version: %v",
			zero, strings.Contains(mod, zero), strings.Contains(dev, "v0.0.0-00010101000000-000000000000"))
	}
	if !strings.Contains(dev, "no replace") || strings.Contains(dev, "replaces `github.com/baton-go/baton`") {
		t.Errorf("Development section does not say go.mod has no replace directive:\n%s", dev)
	}
	work, err := os.ReadFile("../go.work")
	if os.IsNotExist(err) {
		t.Skip("not in the repository checkout (no ../go.work)")
	}
	if err != nil {
		t.Fatal(err)
	}
	if w := string(work); !strings.Contains(w, "./otel") || !strings.Contains(w, zero+" => ./") {
		t.Errorf("go.work does not use ./otel and point %s at the checkout, as the Development section says", zero)
	}
}
