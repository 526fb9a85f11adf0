package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCount: what a user sees counts (exported functions, types, their
// exported fields, methods and interface methods, constants, variables);
// unexported types' methods, test files, internal and main packages do
// not.
func TestCount(t *testing.T) {
	root := t.TempDir()
	write := func(path, src string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lib/a.go", `package lib
const A, b = 1, 2
var V int
type T struct{ X, y int; Z string }
func (T) M() {}
func (*T) m() {}
type I interface{ Do(); do() }
type g[K any] struct{}
func (g[K]) Exported() {}
func F() {}
func f() {}
`) // A V T X Z M I Do F = 9
	write("lib/a_test.go", "package lib\nfunc TestOnly() {}\n")
	write("lib/internal/x/x.go", "package x\nfunc Hidden() {}\n")
	write("cmd/tool/main.go", "package main\nfunc Exported() {}\nfunc main() {}\n")
	got, err := count(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["lib"] != 9 {
		t.Fatalf("count = %v, want map[lib:9]", got)
	}
}
