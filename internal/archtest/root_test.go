package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The composition root's limits: the exec package builds the services and the command
// families and dispatches; anything else it grew would be a concern of its own, in a package
// of its own (exec/command/... for commands, a service package below the kit otherwise).
const (
	maxRootFiles     = 15 // non-test Go files of exec
	maxRootExecutors = 60 // methods on exec.Executor
)

// TestCompositionRoot fails when the exec package holds more than maxRootFiles source
// files or its Executor more than maxRootExecutors methods.
func TestCompositionRoot(t *testing.T) {
	dir := filepath.Join(moduleRoot(t), "exec")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var sources, methods int
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		sources++
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && receiverType(fd) == "Executor" {
				methods++
			}
		}
	}
	if sources > maxRootFiles {
		t.Errorf("exec holds %d source files, over the limit of %d: the composition root only builds and dispatches; "+
			"move the new concern to a package of its own", sources, maxRootFiles)
	}
	if methods > maxRootExecutors {
		t.Errorf("exec.Executor has %d methods, over the limit of %d: move the new concern to a package of its own",
			methods, maxRootExecutors)
	}
}

// receiverType is the name of fd's receiver type, pointer or not.
func receiverType(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
