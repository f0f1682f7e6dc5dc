package archtest

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
)

// depguardRule is one rule of depguard's settings in .golangci.yml: the files it covers and
// the imports it denies them.
type depguardRule struct {
	ListMode string   `yaml:"list-mode"`
	Files    []string `yaml:"files"`
	Allow    []string `yaml:"allow"`
	Deny     []struct {
		Pkg  string `yaml:"pkg"`
		Desc string `yaml:"desc"`
	} `yaml:"deny"`
}

// loadDepguard reads the depguard rules of .golangci.yml, failing on a form this check does
// not model (allow lists, a list mode), so it never passes by misreading the file.
func loadDepguard(t *testing.T, root string) map[string]depguardRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".golangci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Linters struct {
			Settings struct {
				Depguard struct {
					Rules map[string]depguardRule `yaml:"rules"`
				} `yaml:"depguard"`
			} `yaml:"settings"`
		} `yaml:"linters"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf(".golangci.yml: %v", err)
	}
	rules := cfg.Linters.Settings.Depguard.Rules
	if len(rules) == 0 {
		t.Fatal(".golangci.yml has no depguard rules: the check read the wrong keys")
	}
	for name, r := range rules {
		if len(r.Allow) > 0 || r.ListMode != "" {
			t.Fatalf("depguard rule %s has an allow list or a list mode, which this check does not model: extend it", name)
		}
	}
	return rules
}

// globRegexp compiles one of depguard's file globs (gobwas/glob with '/' as the separator,
// matched against a file's path): "**" is any text, "*" and "?" stop at a '/'. Its other
// syntax fails the test, to be added here when a rule needs it.
func globRegexp(t *testing.T, glob string) *regexp.Regexp {
	t.Helper()
	if strings.ContainsAny(glob, "{}[]\\") {
		t.Fatalf("depguard files pattern %q: the check knows only *, ** and ?; extend globRegexp", glob)
	}
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch {
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case glob[i] == '*':
			b.WriteString("[^/]*")
		case glob[i] == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		}
	}
	return regexp.MustCompile("^" + b.String() + "$")
}

// depguardFiles is a rule's files list compiled: a file is covered when a positive pattern
// matches it and no negated one does ($all is every Go file, $test every test file).
type depguardFiles struct{ pos, neg []*regexp.Regexp }

// compileFiles compiles a rule's files list; each pattern but $all and $test must match one of
// files (the repository's Go files), or it names a package that moved or is gone.
func compileFiles(t *testing.T, name string, patterns, files []string) depguardFiles {
	t.Helper()
	var f depguardFiles
	for _, p := range patterns {
		glob, neg := strings.CutPrefix(p, "!")
		switch glob {
		case "$all":
			glob = "**/*.go"
		case "$test":
			glob = "**/*_test.go"
		default:
			re := globRegexp(t, glob)
			if !slices.ContainsFunc(files, func(file string) bool { return re.MatchString("/" + file) }) {
				t.Errorf("depguard rule %s: files pattern %q matches no file of the repository: update it", name, p)
			}
		}
		if neg {
			f.neg = append(f.neg, globRegexp(t, glob))
		} else {
			f.pos = append(f.pos, globRegexp(t, glob))
		}
	}
	return f
}

// covers reports whether the rule applies to file (relative to the module root); depguard
// matches absolute paths, which the leading '/' stands in for.
func (f depguardFiles) covers(file string) bool {
	match := func(re *regexp.Regexp) bool { return re.MatchString("/" + file) }
	return slices.ContainsFunc(f.pos, match) && !slices.ContainsFunc(f.neg, match)
}

// denies reports whether depguard's deny entry pkg denies the import path imp: a prefix, or
// with a trailing '$' the path exactly.
func denies(pkg, imp string) bool {
	if exact, ok := strings.CutSuffix(pkg, "$"); ok {
		return imp == exact
	}
	return strings.HasPrefix(imp, pkg)
}

// TestDepguardAgreesWithLayout checks .golangci.yml's depguard rules against the layout rules.
// depguard is the early warning (the editor and `make lint` flag the import itself); the
// layout rules are the authority. So depguard may deny less than the rules imply, but never
// an import a rule allows, never for files that do not exist, and never a package of ours
// that does not exist.
func TestDepguardAgreesWithLayout(t *testing.T) {
	root := moduleRoot(t)
	g := loadGraph(t, root)
	files := goFiles(t, root)
	for name, r := range loadDepguard(t, root) {
		covered := compileFiles(t, name, r.Files, files)
		for _, d := range r.Deny {
			ours := strings.HasPrefix(d.Pkg, module+"/") || strings.TrimSuffix(d.Pkg, "$") == module
			if ours && !slices.ContainsFunc(g.pkgs, func(q string) bool { return denies(d.Pkg, module+"/"+q) }) {
				t.Errorf("depguard rule %s denies %s, which names no package of ours: update it", name, d.Pkg)
			}
		}
		for _, p := range g.pkgs {
			if !slices.ContainsFunc(g.files[p], func(f string) bool { return covered.covers(path.Join(p, f)) }) {
				continue
			}
			for _, q := range g.pkgs {
				if q == p || !matchesAny(rules[p].allow, q) {
					continue
				}
				for _, d := range r.Deny {
					if denies(d.Pkg, module+"/"+q) {
						t.Errorf("depguard rule %s denies %s importing %s (%s), which its layout rule allows: make them agree",
							name, p, q, d.Desc)
					}
				}
			}
		}
	}
}
