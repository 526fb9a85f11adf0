package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

func TestValidateName(t *testing.T) {
	ok := []struct{ in, want string }{
		{"orders/42", "orders/42"},
		{"/orders/42/", "orders/42"},
		{"order:lock:42", "order:lock:42"},
		{"账户/42", "账户/42"},
		{"\ud7ff", "\ud7ff"},
		{"\uf900", "\uf900"},
		{strings.Repeat("a", baton.MaxNameLen), strings.Repeat("a", baton.MaxNameLen)},
	}
	for _, tc := range ok {
		got, err := engine.ValidateName(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ValidateName(%q) = %q, %v, want %q, nil", tc.in, got, err, tc.want)
		}
	}
	bad := map[string]string{
		"empty":          "",
		"only slash":     "/",
		"empty segment":  "a//b",
		"dot":            "a/./b",
		"dot dot":        "../x",
		"NUL":            "a\x00b",
		"newline":        "a\nb",
		"DEL":            "a\x7fb",
		"C1 control":     "\u0085",
		"private use":    "\ue000",
		"specials":       "\ufff0",
		"too long":       strings.Repeat("a", baton.MaxNameLen+1),
		"invalid UTF-8":  "a\xffb",
		"surrogate half": "\xed\xa0\x80",
	}
	for name, in := range bad {
		if got, err := engine.ValidateName(in); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("%s: ValidateName(%q) = %q, %v, want ErrInvalidName", name, in, got, err)
		}
	}
}

func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"a/b", "/x/", "../..", "a\x00", "\ue000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n, err := engine.ValidateName(in)
		if err != nil {
			if !errors.Is(err, baton.ErrInvalidName) {
				t.Fatalf("ValidateName(%q) = %v, not ErrInvalidName", in, err)
			}
			return
		}
		for _, seg := range strings.Split(n, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("ValidateName(%q) = %q accepted segment %q", in, n, seg)
			}
		}
		if again, err := engine.ValidateName(n); err != nil || again != n {
			t.Fatalf("ValidateName not idempotent: %q → %q → %q, %v", in, n, again, err)
		}
	})
}

// TestReservedSegments: a lock name may not use a segment the recipes
// name their own nodes and keys with; the error names the segment.
// ValidatePath, for the directories derived from a valid name, accepts
// them.
func TestReservedSegments(t *testing.T) {
	for _, in := range []string{
		"x/locks", "x/leases", "locks", "leases/y",
		"x/_c_0b7f-lock-0000000001", "_c_anything",
		"x/lock-0000000001", "x/foo-lease-00000000012", "x/__READ__0000000003",
		"x/__WRIT__0000000004", "x/latch-0000000005",
	} {
		_, err := engine.ValidateName(in)
		if !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalidName", in, err)
			continue
		}
		seg := in[strings.LastIndex(in, "/")+1:]
		if strings.HasPrefix(in, "leases/") {
			seg = "leases"
		}
		if !strings.Contains(err.Error(), `segment "`+seg+`" is reserved`) {
			t.Errorf("ValidateName(%q) = %q, want the reserved segment %q named", in, err, seg)
		}
		if n, err := engine.ValidatePath(in); err != nil || n != in {
			t.Errorf("ValidatePath(%q) = %q, %v, want it unchanged", in, n, err)
		}
	}
	for _, in := range []string{
		"x/lockss", "x/lock", "x/locksmith", "x/block-7", "x/lock-123456789",
		"x/c_lock", "x/__c_", "orders/2024-lease", "x/lease-00000000a1",
	} {
		if n, err := engine.ValidateName(in); err != nil || n != in {
			t.Errorf("ValidateName(%q) = %q, %v, want it accepted", in, n, err)
		}
	}
}

// TestValidateAllocatesNothing: the engines validate a lock's directory
// on every acquire, so a valid name costs no allocation.
func TestValidateAllocatesNothing(t *testing.T) {
	for _, name := range []string{"a", "jobs/nightly/report", "/trimmed/"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = engine.ValidateName(name) }); n != 0 {
			t.Errorf("ValidateName(%q): %v allocations, want 0", name, n)
		}
		dir := strings.TrimSuffix(name, "/") + "/locks"
		if n := testing.AllocsPerRun(100, func() { _, _ = engine.ValidatePath(dir) }); n != 0 {
			t.Errorf("ValidatePath(%q): %v allocations, want 0", dir, n)
		}
	}
}
