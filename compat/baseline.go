package compat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// Baseline is the set of tests known to pass, per suite: CI fails when one of them stops
// passing. It is a text file of "suite<TAB>test" lines, sorted, so its diff reads like a
// changelog of compatibility.
type Baseline map[string]map[string]bool

// ReadBaseline reads a baseline file; a missing file is an empty baseline.
func ReadBaseline(path string) (Baseline, error) {
	b := Baseline{}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		suite, test, ok := strings.Cut(line, "\t")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want suite<TAB>test", path, n)
		}
		b.add(suite, test)
	}
	return b, sc.Err()
}

func (b Baseline) add(suite, test string) {
	if b[suite] == nil {
		b[suite] = map[string]bool{}
	}
	b[suite][test] = true
}

// Write writes the baseline file.
func (b Baseline) Write(path string) error {
	var buf bytes.Buffer
	buf.WriteString("# Spec tests that pass against cleave (suite<TAB>test), kept by `make compat`.\n")
	buf.WriteString("# compat's TestBaseline fails when one of them stops passing.\n")
	for _, suite := range sortedKeys(b) {
		for _, test := range sortedKeys(b[suite]) {
			fmt.Fprintf(&buf, "%s\t%s\n", suite, test)
		}
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// Diff compares results with the baseline: regressions are baseline tests of the suites in
// results that did not pass (with their reason), gains are passing tests the baseline lacks.
// A baseline test that did not pass for a reason testdata/known.txt gives (SuiteResult.Known,
// a test that passes only sometimes, e.g. one racing its own deadline) is excused instead.
func (b Baseline) Diff(results []SuiteResult) (regressions, gains, excused []string) {
	for _, s := range results {
		got := map[string]Result{}
		for _, r := range s.Results {
			got[r.Name] = r
		}
		for _, test := range sortedKeys(b[s.Suite]) {
			r, ok := got[test]
			switch {
			case !ok:
				regressions = append(regressions, fmt.Sprintf("%s\t%s: no longer in the spec files", s.Suite, test))
			case r.Status != Pass && s.Known[test] != "":
				excused = append(excused, fmt.Sprintf("%s\t%s: %s: known: %s", s.Suite, test, r.Status, s.Known[test]))
			case r.Status != Pass:
				regressions = append(regressions, fmt.Sprintf("%s\t%s: %s: %s", s.Suite, test, r.Status, r.Reason))
			}
		}
		for _, r := range s.Results {
			if r.Status == Pass && !b[s.Suite][r.Name] {
				gains = append(gains, s.Suite+"\t"+r.Name)
			}
		}
	}
	sort.Strings(gains)
	return regressions, gains, excused
}

// Update adds the passing tests of results; with prune it also drops the tests of those suites
// that no longer pass.
func (b Baseline) Update(results []SuiteResult, prune bool) {
	for _, s := range results {
		if prune {
			delete(b, s.Suite)
		}
		for _, r := range s.Results {
			if r.Status == Pass {
				b.add(s.Suite, r.Name)
			}
		}
	}
}
