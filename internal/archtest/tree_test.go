package archtest

import (
	"bytes"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the import path of the module whose layout is checked.
const module = "github.com/cleavedb/cleave"

// moduleRoot returns the directory of the module's go.mod: tests run in their package's
// directory, two levels below it.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !bytes.HasPrefix(mod, []byte("module "+module+"\n")) {
		t.Fatalf("%s is not the root of %s (go.mod: %v)", root, module, err)
	}
	return root
}

// skipDir reports whether a walk of the sources leaves out the directory name: fixtures and
// installed node packages hold no code of ours, and the go command ignores the rest too.
func skipDir(name string) bool {
	return name == "testdata" || name == "node_modules" || name == "vendor" ||
		strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// graph is the module's packages and what each imports of ours, from its non-test files as
// built on this platform.
type graph struct {
	pkgs    []string            // sorted, as paths relative to the module root
	imports map[string][]string // package → packages of ours it imports directly, sorted
	files   map[string][]string // package → its non-test Go files built here, by base name
}

// loadGraph reads the package clause and imports of every package under root, leaving out
// the compat module (its own go.mod) and what skipDir leaves out. It builds nothing.
func loadGraph(t *testing.T, root string) *graph {
	t.Helper()
	g := &graph{imports: map[string][]string{}, files: map[string][]string{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == root {
			return err
		}
		if skipDir(d.Name()) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
			return filepath.SkipDir // another module: compat/
		}
		p, err := build.ImportDir(path, 0)
		if _, ok := err.(*build.NoGoError); ok { //nolint:errorlint // ImportDir returns it unwrapped
			return nil
		} else if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		g.pkgs = append(g.pkgs, rel)
		var ours []string
		for _, imp := range p.Imports {
			if dep, ok := strings.CutPrefix(imp, module+"/"); ok {
				ours = append(ours, dep)
			}
		}
		slices.Sort(ours)
		g.imports[rel] = ours
		g.files[rel] = slices.Concat(p.GoFiles, p.CgoFiles)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(g.pkgs)
	for _, want := range []string{"exec", "exec/query", "cmd/cleave", "wire/mongoerr"} {
		if !slices.Contains(g.pkgs, want) {
			t.Fatalf("found %v: the walk missed %s", g.pkgs, want)
		}
	}
	return g
}

// matches reports whether pkg is one of the packages pattern names: "x" is x alone, "x/..."
// is x and every package under it, "..." is every package.
func matches(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// matchesAny reports whether one of patterns names pkg.
func matchesAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, pkg) })
}

// chains returns, for every package from reaches through imports, the shortest import chain
// that brings it in, from included: from → a → b is {from, a, b}. Among chains of the same
// length it takes the first in sorted order, so failures print the same chain on every run.
func (g *graph) chains(from string, next func(string) []string) map[string][]string {
	out := map[string][]string{from: {from}}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, dep := range next(p) {
			if _, seen := out[dep]; seen {
				continue
			}
			out[dep] = append(slices.Clip(out[p]), dep)
			queue = append(queue, dep)
		}
	}
	delete(out, from)
	return out
}

// chainString prints an import chain as the failures show it: "a -> b -> c".
func chainString(chain []string) string {
	return strings.Join(chain, " -> ")
}

// goFiles lists every Go file under root, test files included, as slash-separated paths
// relative to it: this module's and the compat module's, without what skipDir leaves out.
func goFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != root && skipDir(d.Name()):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go"):
			return nil
		}
		rel, err := filepath.Rel(root, path)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
