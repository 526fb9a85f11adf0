// Command scriptcheck checks the repository itself, not baton: its tests
// also check that the nested modules' READMEs describe their layout as it
// is. The command proves that scripts/test.sh installs everything the
// repository's scripts run, on any machine, not only a fresh one: every
// command the shell scripts under scripts/ (and .ci/run) call must come
// from a Debian package test.sh's apt-get install names, from a package one of
// those depends on, or from Debian's base system (Essential or Priority
// required). A machine that has a package by hand would otherwise hide a
// missing entry until a fresh machine failed.
//
//	go run ./scripts/scriptcheck [-root DIR]
//
// It exits 1 naming each command, where it is called and what is wrong.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// prerequisites are the commands the scripts run that no Debian package
// gives: test.sh checks for each itself and says where to get it.
var prerequisites = map[string]bool{"go": true}

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	problems, n, err := check(*root, realDpkg{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "scriptcheck:", err)
		os.Exit(1)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "scriptcheck: %d commands called by the scripts, each from a package test.sh installs or the base system\n", n)
}

// scriptPaths lists .ci/run and every *.sh under scripts/.
func scriptPaths(root string) ([]string, error) {
	paths := []string{filepath.Join(root, ".ci", "run")}
	err := filepath.WalkDir(filepath.Join(root, "scripts"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".sh" {
			paths = append(paths, p)
		}
		return err
	})
	return paths, err
}
