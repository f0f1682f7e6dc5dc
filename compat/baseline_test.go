package compat

import (
	"strings"
	"testing"
	"time"
)

// TestBaseline is CI's compatibility check: it builds cleave, runs the target suites against it
// with the driver's own runners, and fails for every test of testdata/baseline.txt that no
// longer passes. Tests that newly pass are logged; `make compat` adds them to the baseline.
func TestBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cleave and runs the driver's spec tests")
	}
	moduleDir, repoDir, err := Dirs(".")
	if err != nil {
		t.Fatal(err)
	}
	suites, err := SelectSuites("target")
	if err != nil {
		t.Fatal(err)
	}
	results, _, err := RunSuites(t.Context(), Options{
		ModuleDir: moduleDir, RepoDir: repoDir, Suites: suites,
		Timeout: 5 * time.Minute, Progress: logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadBaseline("testdata/baseline.txt")
	if err != nil {
		t.Fatal(err)
	}
	known, err := ReadKnown("testdata/known.txt")
	if err != nil {
		t.Fatal(err)
	}
	known.Apply(results)
	regressions, gains, excused := b.Diff(results)
	for _, g := range gains {
		t.Logf("newly passing (make compat adds it to the baseline): %s", g)
	}
	for _, e := range excused {
		t.Logf("failed for a known reason: %s", e)
	}
	for _, r := range regressions {
		t.Errorf("no longer passes: %s", r)
	}
}

// logWriter sends each line written to it to t.Log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
