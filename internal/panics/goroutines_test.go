package panics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// testSupport are folders of non-test code that only tests and benchmark
// tools run: their goroutines are not the proxy's.
var testSupport = []string{"internal/testutil", "internal/peek/peektest", "internal/benchtools", "acme/acmetest"}

// TestEveryGoroutineRecovers reads the source of every package and checks
// that each goroutine it starts (a go statement, or a WaitGroup's Go)
// runs under a deferred recover: panics.Go, a function literal that
// defers panics.Recover or a function that calls recover(), or a named
// function of the same package whose body does so. An unrecovered panic
// on any goroutine ends the process, with every connection it holds.
func TestEveryGoroutineRecovers(t *testing.T) {
	root := filepath.Join("..", "..")
	pkgs := map[string][]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (strings.HasPrefix(base, ".") || base == "testdata" || base == "bin") {
				return filepath.SkipDir
			}
			for _, s := range testSupport {
				if rel == s || strings.HasPrefix(rel, s+"/") {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		pkgs[filepath.Dir(rel)] = append(pkgs[filepath.Dir(rel)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("found %d packages under %s; the walk is broken", len(pkgs), root)
	}
	starts := 0
	for dir, files := range pkgs {
		decls := map[string][]*ast.FuncDecl{}
		for _, f := range files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					decls[fd.Name.Name] = append(decls[fd.Name.Name], fd)
				}
			}
		}
		c := checker{decls: decls}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				var fn ast.Expr
				switch n := n.(type) {
				case *ast.GoStmt:
					fn = n.Call.Fun
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != "Go" || len(n.Args) != 1 || isIdent(sel.X, "panics") {
						return true
					}
					if _, ok := n.Args[0].(*ast.FuncLit); !ok {
						return true
					}
					fn = n.Args[0]
				default:
					return true
				}
				starts++
				if !c.recovers(fn) {
					t.Errorf("%s: %s: a goroutine without a deferred recover (use panics.Go or defer panics.Recover)",
						dir, fset.Position(n.Pos()))
				}
				return true
			})
		}
	}
	if starts < 10 {
		t.Fatalf("found %d goroutine starts; the check is not looking", starts)
	}
}

type checker struct{ decls map[string][]*ast.FuncDecl }

// recovers reports whether the function a goroutine runs defers a recover.
func (c checker) recovers(fn ast.Expr) bool {
	switch fn := fn.(type) {
	case *ast.FuncLit:
		return c.defersRecover(fn.Body)
	case *ast.Ident:
		return c.namedDefers(fn.Name)
	case *ast.SelectorExpr:
		return c.namedDefers(fn.Sel.Name)
	}
	return false
}

func (c checker) namedDefers(name string) bool {
	for _, d := range c.decls[name] {
		if c.defersRecover(d.Body) {
			return true
		}
	}
	return false
}

// defersRecover reports whether body defers panics.Recover, a function
// literal that calls recover(), or a function of the package that does.
func (c checker) defersRecover(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		d, ok := n.(*ast.DeferStmt)
		if !ok || found {
			return !found
		}
		switch fn := d.Call.Fun.(type) {
		case *ast.SelectorExpr:
			if isIdent(fn.X, "panics") && fn.Sel.Name == "Recover" {
				found = true
			} else {
				found = c.namedCallsRecover(fn.Sel.Name)
			}
		case *ast.FuncLit:
			found = callsRecover(fn.Body)
		case *ast.Ident:
			found = c.namedCallsRecover(fn.Name)
		}
		return !found
	})
	return found
}

func (c checker) namedCallsRecover(name string) bool {
	for _, d := range c.decls[name] {
		if callsRecover(d.Body) {
			return true
		}
	}
	return false
}

func callsRecover(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && isIdent(call.Fun, "recover") {
			found = true
		}
		return !found
	})
	return found
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
