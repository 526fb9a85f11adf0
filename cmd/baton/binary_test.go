package main_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// testOnly are the modules and packages that only tests may link: the
// shipped binary must contain none of them. baton demo embeds etcd's
// server through a package of its own that imports no test code. baton
// drill ships the fault harness — drill/scenario, package drill's history
// and checkers (porcupine among them) and package faultproxy — so those
// are not listed; drill/drilltest, which binds the harness to package
// testing, is, and so is the testkit module, the test support baton's
// modules share. The "testing." symbol check below keeps them honest.
var testOnly = []string{
	"go.uber.org/goleak",
	"github.com/Shopify/toxiproxy",
	"github.com/baton-go/baton/drill/drilltest",
	"github.com/baton-go/baton/testkit",
	"github.com/baton-go/baton/internal/etcdtest",
	"github.com/chromedp/",
}

// TestBinaryShipsNoTestCode checks the binary the tests built: its module
// list (go version -m) names no test-only module, and its symbol table (go
// tool nm) holds nothing of package testing nor of a test-only package.
func TestBinaryShipsNoTestCode(t *testing.T) {
	mods, err := exec.Command("go", "version", "-m", batonBin).Output()
	if err != nil {
		t.Fatalf("go version -m %s = %v", batonBin, err)
	}
	if !bytes.Contains(mods, []byte("github.com/baton-go/baton/cmd/baton")) {
		t.Fatalf("go version -m %s names no baton module:\n%s", batonBin, mods)
	}
	for _, m := range testOnly {
		if bytes.Contains(mods, []byte(m)) {
			t.Errorf("go version -m: the binary depends on %s, which only tests may", m)
		}
	}
	nm := exec.Command("go", "tool", "nm", batonBin)
	out, err := nm.Output()
	if err != nil {
		t.Fatalf("go tool nm %s = %v", batonBin, err)
	}
	symbols, bad := 0, map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		sym := f[len(f)-1]
		symbols++
		for _, p := range append([]string{"testing."}, testOnly...) {
			if strings.HasPrefix(sym, p) {
				bad[p] = sym
			}
		}
	}
	if symbols < 1000 {
		t.Fatalf("go tool nm %s: %d symbols, want a whole program's", batonBin, symbols)
	}
	for p, sym := range bad {
		t.Errorf("go tool nm: the binary links %s (e.g. %s), which only tests may", p, sym)
	}
}
