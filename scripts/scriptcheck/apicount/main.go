// Command apicount counts the exported identifiers of every public package
// of the repository: what a user of the library sees in its
// documentation. It counts exported top-level functions, types, constants
// and variables, and the exported methods, struct fields and interface
// methods of exported types; test files, internal/ packages and main
// packages are left out.
//
//	go run ./scripts/scriptcheck/apicount [-root DIR]
//
// It prints one line per package, largest first, then the total.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	counts, err := count(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(1)
	}
	pkgs := make([]string, 0, len(counts))
	total := 0
	for p, n := range counts {
		pkgs = append(pkgs, p)
		total += n
	}
	sort.Slice(pkgs, func(i, j int) bool {
		if counts[pkgs[i]] != counts[pkgs[j]] {
			return counts[pkgs[i]] > counts[pkgs[j]]
		}
		return pkgs[i] < pkgs[j]
	})
	for _, p := range pkgs {
		fmt.Printf("%5d  %s\n", counts[p], p)
	}
	fmt.Printf("%5d  in %d public packages\n", total, len(pkgs))
}

// count maps each public package directory (relative to root) to its
// number of exported identifiers.
func count(root string) (map[string]int, error) {
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		base := d.Name()
		if rel != "." && (strings.HasPrefix(base, ".") || base == "internal" || base == "testdata" ||
			base == "scripts" || base == "bench" || base == "examples" || base == "interop" || base == "web") {
			return filepath.SkipDir
		}
		n, ok, err := countDir(path)
		if err == nil && ok {
			counts[filepath.ToSlash(rel)] = n
		}
		return err
	})
	return counts, err
}

// countDir counts one directory's package; ok is false for a directory
// without Go files or with a main package.
func countDir(dir string) (n int, ok bool, err error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return 0, false, err
	}
	for name, p := range pkgs {
		if name == "main" {
			return 0, false, nil
		}
		for _, f := range p.Files {
			n += countFile(f)
		}
		ok = true
	}
	return n, ok, nil
}

func countFile(f *ast.File) int {
	n := 0
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil || exportedRecv(d.Recv) {
				n++
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if id.IsExported() {
							n++
						}
					}
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						n += 1 + members(s.Type)
					}
				}
			}
		}
	}
	return n
}

// members counts a type's exported fields or interface methods.
func members(t ast.Expr) int {
	var fields *ast.FieldList
	switch t := t.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return 0
	}
	n := 0
	for _, f := range fields.List {
		for _, id := range f.Names {
			if id.IsExported() {
				n++
			}
		}
	}
	return n
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}
