package main

import (
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A use is one command a script runs, where it runs it.
type use struct {
	name string // the command word: a name, an absolute path, or "*/tail" for "$dir/tail"
	pos  string // file:line
}

// script is one parsed shell file.
type script struct {
	name string
	file *syntax.File
}

func parseScripts(paths []string) ([]script, error) {
	var out []script
	for _, p := range paths {
		src, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(src, p)
		src.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, script{name: p, file: f})
	}
	return out, nil
}

// uses lists the external commands the scripts run: every command word
// that is not a function one of them defines, a shell builtin or keyword,
// or another script of the repository (a relative path, checked on its
// own). Words behind a wrapper (nohup, exec, runuser -u U --, env,
// timeout, command) are followed to the command they run; a trap's code
// is parsed like the rest. A word the shell computes at run time ("$fn")
// names no command and is skipped, except a computed directory with a
// literal last element ("$bin/initdb"), which is looked up by that
// element.
func uses(scripts []script) ([]use, error) {
	funcs := map[string]bool{}
	for _, s := range scripts {
		syntax.Walk(s.file, func(n syntax.Node) bool {
			if fd, ok := n.(*syntax.FuncDecl); ok {
				funcs[fd.Name.Value] = true
			}
			return true
		})
	}
	var out []use
	var walkErr error
	var visit func(name string, n syntax.Node)
	visit = func(name string, n syntax.Node) {
		syntax.Walk(n, func(n syntax.Node) bool {
			call, ok := n.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			words := literals(call.Args)
			if words[0] == "trap" && len(call.Args) > 1 && words[1] != "" {
				f, err := syntax.NewParser().Parse(strings.NewReader(words[1]), name)
				if err != nil {
					walkErr = fmt.Errorf("%s: trap: %v", name, err)
					return false
				}
				visit(name, f)
			}
			cmd := command(words)
			if cmd == "" || funcs[cmd] || builtins[cmd] || isRepoPath(cmd) {
				return true
			}
			out = append(out, use{name: cmd, pos: fmt.Sprintf("%s:%d", name, call.Pos().Line())})
			return true
		})
	}
	for _, s := range scripts {
		visit(s.name, s.file)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, walkErr
}

// literals gives each word's text when it is a literal (quotes removed),
// "*/tail" for a computed path with a literal last element, else "".
func literals(args []*syntax.Word) []string {
	out := make([]string, len(args))
	for i, w := range args {
		if lit, ok := literal(w); ok {
			out[i] = lit
			continue
		}
		// "$bin/initdb": the last part a literal path element.
		last := w.Parts[len(w.Parts)-1]
		if dq, ok := last.(*syntax.DblQuoted); ok && len(dq.Parts) > 0 {
			last = dq.Parts[len(dq.Parts)-1]
		}
		if l, ok := last.(*syntax.Lit); ok && strings.HasPrefix(l.Value, "/") && !strings.ContainsAny(l.Value[1:], "/ ") && len(l.Value) > 1 {
			out[i] = "*" + l.Value
		}
	}
	return out
}

// literal returns a word's value when no part of it is computed.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// command follows wrappers to the word that names the command run; ""
// when it is computed or the call only asks about a command (command -v).
func command(words []string) string {
	for len(words) > 0 {
		switch words[0] {
		case "nohup", "exec", "setsid", "nice":
			words = words[1:]
		case "command":
			if len(words) > 1 && (words[1] == "-v" || words[1] == "-V") {
				return ""
			}
			words = words[1:]
		case "env":
			words = words[1:]
			for len(words) > 0 && (strings.Contains(words[0], "=") || strings.HasPrefix(words[0], "-")) {
				words = words[1:]
			}
		case "timeout":
			words = words[1:]
			for len(words) > 0 && strings.HasPrefix(words[0], "-") {
				if words[0] == "-s" || words[0] == "-k" {
					words = words[1:] // the option's value
				}
				words = words[1:]
			}
			if len(words) > 0 {
				words = words[1:] // the duration
			}
		case "runuser", "sudo":
			i := indexOf(words, "--")
			if i < 0 {
				return words[0] // runuser's own form without a command
			}
			words = words[i+1:]
		default:
			return words[0]
		}
	}
	return ""
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// isRepoPath reports a relative path: the repository's own scripts.
func isRepoPath(cmd string) bool {
	return strings.Contains(cmd, "/") && !path.IsAbs(cmd) && !strings.HasPrefix(cmd, "*/")
}

var builtins = map[string]bool{}

func init() {
	for _, b := range strings.Fields(`. : [ [[ alias bg bind break builtin caller cd command compgen
		complete compopt continue declare dirs disown echo enable eval exec exit export false fc fg
		getopts hash help history jobs kill let local logout mapfile popd printf pushd pwd read
		readarray readonly return set shift shopt source suspend test times trap true type typeset
		ulimit umask unalias unset wait`) {
		builtins[b] = true
	}
}
