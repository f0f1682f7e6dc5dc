package compat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// KnownFailure says why tests of a suite fail against cleave, where the runner's own message
// does not (a capped collection the test needs, a change stream it opens): the compat
// table (docs/compatibility.md) shows Reason for every failing test whose name Pattern matches.
type KnownFailure struct {
	Suite string
	// Pattern is a path.Match pattern over the test name ("find.json/Find_*"); one without a
	// slash matches the file part of the name ("changeStreams-*" or "*": every test of those files),
	// which for a prose suite is the test function ("TestHandshakeProse").
	Pattern string
	Reason  string
}

// Known is the list of known failures, in file order: the first matching entry wins.
type Known []KnownFailure

// ReadKnown reads a known-failures file: "suite<TAB>pattern<TAB>reason" lines, blank lines
// and "#" comments ignored. A missing file is an empty list.
func ReadKnown(file string) (Known, error) {
	raw, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var k Known
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || strings.TrimSpace(parts[2]) == "" {
			return nil, fmt.Errorf("%s:%d: want suite<TAB>pattern<TAB>reason", file, n)
		}
		if _, err := path.Match(parts[1], ""); err != nil {
			return nil, fmt.Errorf("%s:%d: pattern %q: %w", file, n, parts[1], err)
		}
		if _, ok := suiteByName(parts[0]); !ok {
			return nil, fmt.Errorf("%s:%d: unknown suite %q", file, n, parts[0])
		}
		k = append(k, KnownFailure{Suite: parts[0], Pattern: parts[1], Reason: strings.TrimSpace(parts[2])})
	}
	return k, sc.Err()
}

// reason returns the known reason for a failing test of suite, or "".
func (k Known) reason(suite, test string) string {
	for _, f := range k {
		if f.Suite != suite {
			continue
		}
		name := test
		if !strings.Contains(f.Pattern, "/") {
			name, _, _ = strings.Cut(test, "/")
		}
		if ok, _ := path.Match(f.Pattern, name); ok || f.Pattern == test {
			return f.Reason
		}
	}
	return ""
}

// Apply records, in each suite result, the known reason of every test that failed or did
// not run and matches an entry.
func (k Known) Apply(results []SuiteResult) {
	for i := range results {
		s := &results[i]
		for _, r := range s.Results {
			if r.Status != Fail && r.Status != NotRun {
				continue
			}
			if why := k.reason(s.Suite, r.Name); why != "" {
				if s.Known == nil {
					s.Known = map[string]string{}
				}
				s.Known[r.Name] = why
			}
		}
	}
}

// failReason is the reason the compat table gives for a failing test: the known reason when there
// is one, else the runner's message.
func (s SuiteResult) failReason(r Result) string {
	if why := s.Known[r.Name]; why != "" {
		return "known: " + why
	}
	return r.Reason
}
