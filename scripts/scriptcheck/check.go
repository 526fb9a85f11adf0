package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// check returns one line per command the scripts under root call that
// test.sh's packages do not account for, and how many distinct commands
// it checked.
func check(root string, d dpkg) ([]string, int, error) {
	paths, err := scriptPaths(root)
	if err != nil {
		return nil, 0, err
	}
	scripts, err := parseScripts(paths)
	if err != nil {
		return nil, 0, err
	}
	list, err := packageList(scripts, filepath.Join(root, "scripts", "test.sh"))
	if err != nil {
		return nil, 0, err
	}
	all, err := uses(scripts)
	if err != nil {
		return nil, 0, err
	}
	pkgs, err := d.installed()
	if err != nil {
		return nil, 0, err
	}
	brought := closure(list, pkgs)
	var problems []string
	seen := map[string]string{} // command → its verdict, "" when fine
	for _, u := range all {
		verdict, ok := seen[u.name]
		if !ok {
			verdict = judge(u.name, d, pkgs, brought)
			seen[u.name] = verdict
		}
		if verdict != "" {
			rel, _ := filepath.Rel(root, strings.SplitN(u.pos, ":", 2)[0])
			problems = append(problems, fmt.Sprintf("%s:%s: %s: %s", rel, strings.SplitN(u.pos, ":", 2)[1], u.name, verdict))
		}
	}
	return problems, len(seen), nil
}

// judge says what is wrong with one command, "" when nothing is.
func judge(name string, d dpkg, pkgs map[string]pkgInfo, brought map[string]bool) string {
	if prerequisites[name] {
		return ""
	}
	file := name
	if !strings.HasPrefix(name, "*/") {
		var err error
		if file, err = lookPath(name); err != nil {
			return "not installed: add the Debian package that has it to the apt-get install command in scripts/test.sh"
		}
	}
	pkg := ownerOf(d, file)
	switch {
	case pkg == "":
		return fmt.Sprintf("%s belongs to no Debian package: install it from one that test.sh lists", file)
	case brought[pkg] || pkgs[pkg].base:
		return ""
	default:
		return fmt.Sprintf("comes from %s, which scripts/test.sh does not install (not on its apt-get install command, not a dependency of one, not in Debian's base system)", pkg)
	}
}

// lookPath finds a command as root's shell would: PATH plus the sbin
// directories a non-login shell may lack.
func lookPath(name string) (string, error) {
	if filepath.IsAbs(name) {
		if _, err := os.Stat(name); err != nil {
			return "", err
		}
		return name, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/local/sbin", "/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// packageList reads the packages test.sh installs: the literal words
// after "install" in its apt-get calls, flags aside. Every such call (the
// simulation that decides, the install) must name the same packages.
func packageList(scripts []script, testSh string) ([]string, error) {
	for _, s := range scripts {
		if s.name != testSh {
			continue
		}
		var list []string
		var mismatch error
		syntax.Walk(s.file, func(n syntax.Node) bool {
			c, ok := n.(*syntax.CallExpr)
			if !ok || len(c.Args) == 0 {
				return true
			}
			if name, _ := literal(c.Args[0]); name != "apt-get" {
				return true
			}
			after := false
			var call []string
			for _, w := range c.Args[1:] {
				v, ok := literal(w)
				switch {
				case !ok:
				case v == "install":
					after = true
				case after && !strings.HasPrefix(v, "-"):
					call = append(call, v)
				}
			}
			switch {
			case len(call) == 0:
			case list == nil:
				list = call
			case !slices.Equal(list, call) && mismatch == nil:
				mismatch = fmt.Errorf("%s: its apt-get install commands name different packages: %v and %v", testSh, list, call)
			}
			return true
		})
		if mismatch != nil {
			return nil, mismatch
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("%s has no apt-get install of named packages", testSh)
		}
		return list, nil
	}
	return nil, fmt.Errorf("%s not found", testSh)
}
