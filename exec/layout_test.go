package exec_test

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// module is the import path of this module.
const module = "github.com/cleavedb/cleave"

// forbidden lists, per package, packages of ours it must not import, directly or through
// another package (DESIGN.md's layout: a package never reaches up). A rule on "x" covers
// x's subpackages too.
var forbidden = map[string][]string{
	"bsonx":           {"exec", "shard", "store", "wire"},
	"wire/mongoerr":   {"bsonx", "exec", "shard", "store", "wire"},
	"wire":            {"exec", "shard", "store"},
	"store":           {"exec", "shard", "wire"},
	"shard":           {"exec", "store", "wire"},
	"auth":            {"exec", "shard", "store", "wire"},
	"cluster":         {"exec", "wire"},
	"exec/args":       {"exec/catalog", "exec/stream", "exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg"},
	"exec/collation":  {"exec/catalog", "exec/stream", "exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg", "exec/match", "exec/expr", "store", "shard"},
	"exec/expr":       {"exec/catalog", "exec/stream", "exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg", "store", "shard"},
	"exec/geo":        {"exec/catalog", "exec/stream", "exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg", "exec/match", "exec/expr", "store", "shard"},
	"exec/match":      {"exec/catalog", "exec/stream", "exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg", "store", "shard"},
	"exec/update":     {"exec/catalog", "exec/stream", "exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg", "store", "shard"},
	"exec/project":    {"exec/catalog", "exec/stream", "exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg", "store", "shard"},
	"exec/stream":     {"exec/catalog", "exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg", "shard"},
	"exec/catalog":    {"exec/stream", "exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg"},
	"exec/query":      {"exec/write", "exec/sharding", "exec/ddl", "exec/agg"},
	"exec/write":      {"exec/sharding", "exec/ddl", "exec/agg"},
	"exec/sharding":   {"exec/ddl", "exec/agg"},
	"exec/ddl":        {"exec/sharding", "exec/agg"},
	"exec/validate":   {"exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg"},
	"exec/agg":        {"exec/sharding", "exec/ddl"},
	"exec/internal/*": {"exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg"},
}

// TestLayoutImports fails when a package imports, directly or not, one it must not, or when
// anything but cmd/ imports exec itself (exec is the top: handlers only).
func TestLayoutImports(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	deps := map[string][]string{} // our package → our packages it imports, transitively
	var load func(rel string) []string
	load = func(rel string) []string {
		if d, ok := deps[rel]; ok {
			return d
		}
		deps[rel] = nil // cycles cannot compile; this only stops the recursion
		p, err := build.ImportDir(filepath.Join(root, rel), 0)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		var out []string
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			out = append(out, dep)
			out = append(out, load(dep)...)
		}
		slices.Sort(out)
		out = slices.Compact(out)
		deps[rel] = out
		return out
	}
	for _, rel := range ourPackages(t, root) {
		for _, dep := range load(rel) {
			if dep == "exec" && !strings.HasPrefix(rel, "cmd/") {
				t.Errorf("%s imports exec: only cmd/ may (exec is the top of the tree)", rel)
			}
			for pattern, denied := range forbidden {
				if !covers(pattern, rel) {
					continue
				}
				for _, d := range denied {
					if dep == d || strings.HasPrefix(dep, d+"/") {
						t.Errorf("%s imports %s (directly or through another package): forbidden by the layout", rel, dep)
					}
				}
			}
		}
	}
}

// covers reports whether rule pattern ("exec/query", "exec/internal/*") applies to rel.
func covers(pattern, rel string) bool {
	if p, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(rel, p+"/")
	}
	return rel == pattern
}

// ourPackages lists the module's non-test packages (directories with Go files) under root,
// relative to it, leaving out the compat module, testdata and node_modules.
func ourPackages(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		switch name := d.Name(); {
		case path == root:
			return nil
		case name == "testdata" || name == "node_modules" || name == "compat" || strings.HasPrefix(name, "."):
			return filepath.SkipDir
		}
		if _, err := build.ImportDir(path, 0); err == nil {
			rel, _ := filepath.Rel(root, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(out, "exec/query") || !slices.Contains(out, "exec/write") || !slices.Contains(out, "cmd/cleave") {
		t.Fatalf("found %v: the walk missed packages", out)
	}
	return out
}
