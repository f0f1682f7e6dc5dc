package archtest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The limits of size. Past them a package, a file or a function is no longer read whole, so
// it is split by meaning (not cut at the limit); the exceptions are listed in sizeExceptions.
const (
	maxPackageFiles = 40  // non-test Go files of one package
	maxFileLines    = 600 // lines of a non-test Go file
	maxFuncLines    = 80  // lines of a function or method, from func to its closing brace
)

// sizeException lets one package, file or function exceed its limit, up to max. A file or a
// function is named by its file's base name, so that the exception follows it when it moves
// to another package; a package by its directory.
type sizeException struct {
	pkg    string // a package's directory, relative to the repository: its number of files
	file   string // a file's base name: its lines, or with fn the file fn is in
	fn     string // a function's or method's name, without receiver: its lines
	max    int    // the size it may reach: today's, so that it does not grow
	reason string
}

// sizeExceptions is every exception to the limits. An exception that no longer matches
// anything over its limit fails the test, so the list shrinks as code is split.
var sizeExceptions = []sizeException{
	{file: "ops.go", fn: "init", max: 144, reason: "generated-like: the table of every expression operator"},
}

// sizeTarget is something whose size is limited: a package, a file or a function.
type sizeTarget struct {
	pkg, file, fn string // as in sizeException; file is the full path for the message
	what          string // how the message names it
	size, limit   int
	unit          string
}

// TestSizes fails on a package, file or function over its limit, in this module and in the
// compat module, unless sizeExceptions lets it be that size. It parses the sources and builds
// nothing.
func TestSizes(t *testing.T) {
	root := moduleRoot(t)
	var targets []sizeTarget
	perPackage := map[string]int{}
	for _, rel := range goFiles(t, root) {
		if strings.HasSuffix(rel, "_test.go") {
			continue
		}
		perPackage[path.Dir(rel)]++
		targets = append(targets, fileTargets(t, root, rel)...)
	}
	for dir, n := range perPackage {
		targets = append(targets, sizeTarget{pkg: dir, what: "package " + dir, size: n, limit: maxPackageFiles, unit: "non-test Go files"})
	}
	slices.SortFunc(targets, func(a, b sizeTarget) int { return strings.Compare(a.what, b.what) })
	used := make([]bool, len(sizeExceptions))
	for _, x := range targets {
		if x.size <= x.limit {
			continue
		}
		i := slices.IndexFunc(sizeExceptions, func(e sizeException) bool { return e.covers(x) })
		switch {
		case i < 0:
			t.Errorf("%s: %d %s, over the limit of %d: split it by meaning, or add an exception with its reason to sizeExceptions",
				x.what, x.size, x.unit, x.limit)
		case x.size > sizeExceptions[i].max:
			used[i] = true
			t.Errorf("%s: %d %s, over the limit of %d and over the %d its exception allows (%s)",
				x.what, x.size, x.unit, x.limit, sizeExceptions[i].max, sizeExceptions[i].reason)
		default:
			used[i] = true
		}
	}
	for i, e := range sizeExceptions {
		if !used[i] {
			t.Errorf("the size exception %s (%s) matches nothing over its limit any more: remove it", e, e.reason)
		}
	}
}

// fileTargets returns the limited sizes of one non-test file (rel, relative to root): its
// lines and each function's.
func fileTargets(t *testing.T, root, rel string) []sizeTarget {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		lines++
	}
	base := path.Base(rel)
	out := []sizeTarget{{file: base, what: rel, size: lines, limit: maxFileLines, unit: "lines"}}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Type.Func).Line + 1
		out = append(out, sizeTarget{file: base, fn: fd.Name.Name, what: rel + ": func " + funcName(fd),
			size: n, limit: maxFuncLines, unit: "lines"})
	}
	return out
}

// funcName is a function's name as messages show it: Recv.Name for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// covers reports whether the exception is about target x.
func (e sizeException) covers(x sizeTarget) bool {
	switch {
	case e.pkg != "":
		return x.pkg == e.pkg
	case e.fn != "":
		return x.fn == e.fn && x.file == e.file
	default:
		return x.fn == "" && x.pkg == "" && x.file == e.file
	}
}

// String names the exception as its failures do.
func (e sizeException) String() string {
	switch {
	case e.pkg != "":
		return "package " + e.pkg
	case e.fn != "":
		return fmt.Sprintf("func %s in %s", e.fn, e.file)
	}
	return e.file
}
