package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// A dpkg answers which Debian package owns a file and which packages a
// machine gets with a list of them. Its two methods are the only places
// that run dpkg, so tests can give a table instead.
type dpkg interface {
	// owner names the package that installed file, "" if none did.
	owner(file string) string
	// installed describes every installed package.
	installed() (map[string]pkgInfo, error)
}

type pkgInfo struct {
	base    bool     // Essential: yes or Priority: required: on every Debian system
	depends []string // Depends and Pre-Depends, each alternative, no versions
	virtual []string // Provides
}

type realDpkg struct{}

func (realDpkg) owner(file string) string {
	out, err := exec.Command("dpkg-query", "-S", file).Output()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "diversion ") {
			continue
		}
		if i := strings.Index(line, ": "); i > 0 {
			return archless(strings.Split(line[:i], ", ")[0])
		}
	}
	return ""
}

func (realDpkg) installed() (map[string]pkgInfo, error) {
	out, err := exec.Command("dpkg-query", "-W", "-f",
		"${db:Status-Abbrev}\t${Package}\t${Essential}\t${Priority}\t${Pre-Depends}, ${Depends}\t${Provides}\n").Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-query: %v", err)
	}
	return parseInstalled(string(out)), nil
}

// parseInstalled reads dpkg-query's table (see installed) of the packages
// whose status is "ii".
func parseInstalled(table string) map[string]pkgInfo {
	pkgs := map[string]pkgInfo{}
	for _, line := range strings.Split(table, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 6 || !strings.HasPrefix(f[0], "ii") {
			continue
		}
		pkgs[f[1]] = pkgInfo{
			base:    f[2] == "yes" || f[3] == "required",
			depends: relations(f[4]),
			virtual: relations(f[5]),
		}
	}
	return pkgs
}

// relations splits a Depends-style field into package names: every
// alternative of "a (>= 1) | b:any, c", so "a", "b", "c".
func relations(field string) []string {
	var out []string
	for _, group := range strings.Split(field, ",") {
		for _, alt := range strings.Split(group, "|") {
			name := strings.Fields(alt)
			if len(name) > 0 {
				out = append(out, archless(name[0]))
			}
		}
	}
	return out
}

func archless(pkg string) string {
	if i := strings.IndexByte(pkg, ':'); i > 0 {
		return pkg[:i]
	}
	return pkg
}

// closure is every installed package the listed ones bring, themselves
// included, following dependencies through the packages that provide a
// virtual one.
func closure(list []string, pkgs map[string]pkgInfo) map[string]bool {
	providers := map[string][]string{}
	for name, p := range pkgs {
		for _, v := range p.virtual {
			providers[v] = append(providers[v], name)
		}
	}
	seen := map[string]bool{}
	var add func(string)
	add = func(name string) {
		if seen[name] {
			return
		}
		if _, ok := pkgs[name]; ok {
			seen[name] = true
			for _, d := range pkgs[name].depends {
				add(d)
			}
		}
		for _, p := range providers[name] {
			add(p)
		}
	}
	for _, name := range list {
		add(name)
	}
	return seen
}

// ownerOf finds the package that installed the command at path, trying
// the path as found, its target (alternatives are symlinks) and the
// other spelling of a merged /usr (dpkg may know /bin/ps as installed,
// PATH finds /usr/bin/ps).
func ownerOf(d dpkg, file string) string {
	cands := []string{file}
	if real, err := filepath.EvalSymlinks(file); err == nil && real != file {
		cands = append(cands, real)
	}
	for _, c := range cands[:len(cands):len(cands)] {
		for _, pair := range [][2]string{{"/usr/bin/", "/bin/"}, {"/usr/sbin/", "/sbin/"}} {
			if strings.HasPrefix(c, pair[0]) {
				cands = append(cands, pair[1]+strings.TrimPrefix(c, pair[0]))
			} else if strings.HasPrefix(c, pair[1]) {
				cands = append(cands, pair[0]+strings.TrimPrefix(c, pair[1]))
			}
		}
	}
	for _, c := range cands {
		if p := d.owner(c); p != "" {
			return p
		}
	}
	return ""
}
