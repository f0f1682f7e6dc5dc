package command

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A connection keeps one Request and reuses it for each of its commands (exec/conn.go's
// conn.req): a *Request kept past the handler's return would see the next command's fields,
// or a goroutine reading it would race with the next command's writes. The race-built server
// of the integration tests poisons the Request once Handle returns (exec's poisonRequest), so
// that a command that keeps it reads marker values there (and the race detector flags a
// goroutine that reads it); TestRequestNotRetained below catches it before any test runs
// the command: it reads exec's sources and refuses every way a *Request can outlive its call.

// retainCase is a piece of source TestRequestNotRetained must refuse (want > 0) or allow.
type retainCase struct {
	name, src string
	want      int
}

// retainCases are the shapes of keeping a *Request, and of using it that keep nothing.
var retainCases = []retainCase{
	{"Goroutine", `func f(r *command.Request) { go func() { _ = r.Name }() }`, 1},
	{"GoroutineArg", `func f(r *command.Request) { go use(r) }`, 1},
	{"Field", `func f(r *command.Request) { c.req = r }`, 1},
	{"MapEntry", `func f(r *command.Request) { m[k] = r }`, 1},
	{"CompositeLit", `func f(r *command.Request) { keep(&state{req: r}) }`, 1},
	{"Append", `func f(r *command.Request) { list = append(list, r) }`, 1},
	{"Send", `func f(r *command.Request) { ch <- r }`, 1},
	{"StoredClosure", `func f(r *command.Request) { c.onClose = func() { r.Out = nil } }`, 1},
	{"StructField", `type s struct{ req *command.Request }`, 1},
	{"InPackage", `func f(r *Request) { go func() { _ = r }() }`, 1},
	{"Uses", `func f(r *command.Request) error { r.Out = append(r.Out, 1); return g(r) }`, 0},
	{"CallbackNotStored", `func f(r *command.Request) { forEach(func() { r.Name = "x" }) }`, 0},
	{"Local", `func f(r *command.Request) { q := r; _ = q }`, 0},
	{"DeferredUse", `func f(r *command.Request) { defer done(r) }`, 0},
	{"Marked", "func f(r *command.Request) {\n\t// request-scoped: joined before the return\n\tgo use(r)\n}", 0},
}

// TestRequestNotRetainedCases checks the check on retainCases.
func TestRequestNotRetainedCases(t *testing.T) {
	for _, tc := range retainCases {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "case.go", "package p\n"+tc.src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if got := retained(fset, f, true); len(got) != tc.want {
				t.Errorf("%s: %d findings %v, want %d", tc.src, len(got), got, tc.want)
			}
		})
	}
}

// TestRequestNotRetained reads every non-test source file of exec and its packages and fails
// on a *command.Request (a *Request in package command) that may outlive the call it was
// given to: started in a goroutine, stored in a field, a map, a slice, a struct literal or a
// channel, captured by a closure that is stored, or declared as a struct field.
func TestRequestNotRetained(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		found = append(found, retained(fset, f, f.Name.Name == "command")...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("a *command.Request must not outlive its call (the connection reuses it for the next command):\n%s",
			strings.Join(found, "\n"))
	}
}

// scopedMark, in a comment on the line of a finding or the line above, says why the
// *Request does not outlive the call there after all (goroutines joined before it returns,
// a struct that lives only during the call): "// request-scoped: <why>".
const scopedMark = "request-scoped:"

// retained returns where f lets a *Request outlive the call it was given to, but for the
// places marked request-scoped; inCommand says f is package command's own, where the type is
// spelled *Request.
func retained(fset *token.FileSet, f *ast.File, inCommand bool) []string {
	marked := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.Contains(c.Text, scopedMark) {
				line := fset.Position(c.Pos()).Line
				marked[line], marked[line+1] = true, true
			}
		}
	}
	var out []string
	report := func(n ast.Node, what string) {
		if pos := fset.Position(n.Pos()); !marked[pos.Line] {
			out = append(out, fmt.Sprintf("%s: %s", pos, what))
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.StructType:
			for _, fld := range x.Fields.List {
				if isRequestPtr(fld.Type, inCommand) {
					report(fld, "a struct field holds a *Request")
				}
			}
		case *ast.FuncDecl:
			checkFunc(x.Type, x.Body, inCommand, report)
		case *ast.FuncLit:
			checkFunc(x.Type, x.Body, inCommand, report)
		}
		return true
	})
	return out
}

// isRequestPtr reports whether e spells *command.Request (*Request in package command).
func isRequestPtr(e ast.Expr, inCommand bool) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	switch x := star.X.(type) {
	case *ast.SelectorExpr:
		pkg, ok := x.X.(*ast.Ident)
		return ok && pkg.Name == "command" && x.Sel.Name == "Request"
	case *ast.Ident:
		return inCommand && x.Name == "Request"
	}
	return false
}

// checkFunc reports the ways body lets a *Request parameter of typ outlive the call.
func checkFunc(typ *ast.FuncType, body *ast.BlockStmt, inCommand bool, report func(ast.Node, string)) {
	if body == nil || typ.Params == nil {
		return
	}
	var params []string
	for _, p := range typ.Params.List {
		if isRequestPtr(p.Type, inCommand) {
			for _, n := range p.Names {
				params = append(params, n.Name)
			}
		}
	}
	if len(params) == 0 {
		return
	}
	isParam := func(e ast.Expr) bool {
		id, ok := ast.Unparen(e).(*ast.Ident)
		return ok && slices.Contains(params, id.Name)
	}
	uses := func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(m ast.Node) bool {
			if id, ok := m.(*ast.Ident); ok && slices.Contains(params, id.Name) {
				found = true
			}
			return !found
		})
		return found
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.GoStmt:
			if uses(x.Call) {
				report(x, "a goroutine uses the *Request")
			}
		case *ast.AssignStmt:
			checkAssign(x, isParam, uses, report)
		case *ast.CompositeLit:
			for _, el := range x.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					el = kv.Value
				}
				if isParam(el) || isClosureOver(el, uses) {
					report(el, "a composite literal holds the *Request")
				}
			}
		case *ast.SendStmt:
			if isParam(x.Value) || isClosureOver(x.Value, uses) {
				report(x, "the *Request is sent on a channel")
			}
		case *ast.CallExpr:
			if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "append" {
				for _, a := range x.Args[1:] {
					if isParam(a) || isClosureOver(a, uses) {
						report(a, "the *Request is appended to a slice")
					}
				}
			}
		}
		return true
	})
}

// checkAssign reports an assignment that stores a *Request parameter, or a closure over
// one, anywhere but in a plain variable.
func checkAssign(a *ast.AssignStmt, isParam func(ast.Expr) bool, uses func(ast.Node) bool, report func(ast.Node, string)) {
	for i, rhs := range a.Rhs {
		if i >= len(a.Lhs) {
			break
		}
		if _, plain := a.Lhs[i].(*ast.Ident); plain {
			continue
		}
		if isParam(rhs) {
			report(a, "the *Request is stored in "+exprKind(a.Lhs[i]))
		} else if isClosureOver(rhs, uses) {
			report(a, "a closure over the *Request is stored in "+exprKind(a.Lhs[i]))
		}
	}
}

// isClosureOver reports whether e is a function literal that uses a *Request parameter.
func isClosureOver(e ast.Expr, uses func(ast.Node) bool) bool {
	fl, ok := ast.Unparen(e).(*ast.FuncLit)
	return ok && uses(fl.Body)
}

// exprKind names what an assignment's left side is, for the report.
func exprKind(e ast.Expr) string {
	switch e.(type) {
	case *ast.SelectorExpr:
		return "a field"
	case *ast.IndexExpr:
		return "a map or slice"
	case *ast.StarExpr:
		return "a pointer's target"
	}
	return "an expression"
}
