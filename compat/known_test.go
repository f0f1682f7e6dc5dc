package compat

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKnownFile checks that testdata/known.txt parses and names real suites.
func TestKnownFile(t *testing.T) {
	k, err := ReadKnown(filepath.Join("testdata", "known.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(k) == 0 {
		t.Fatal("no known failures read")
	}
}

// TestKnownApply: a failing test matched by a pattern gets its reason in the compat
// table, in place of the runner's message; a passing one and an unmatched one do not.
func TestKnownApply(t *testing.T) {
	file := filepath.Join(t.TempDir(), "known.txt")
	body := "# comment\nretryable-reads\tchangeStreams-*\tno change streams\ncrud\tfind.json/exact\tbecause\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := ReadKnown(file)
	if err != nil {
		t.Fatal(err)
	}
	results := []SuiteResult{
		{Suite: "retryable-reads", Results: []Result{
			{Name: "changeStreams-db.watch.json/a", Status: Fail, Reason: "NotImplemented"},
			{Name: "changeStreams-db.watch.json/b", Status: Pass},
			{Name: "find.json/c", Status: Fail, Reason: "boom"},
		}},
		{Suite: "crud", Results: []Result{{Name: "find.json/exact", Status: NotRun, Reason: "x"}}},
	}
	k.Apply(results)
	if got := results[0].Known; len(got) != 1 || got["changeStreams-db.watch.json/a"] != "no change streams" {
		t.Fatalf("retryable-reads known = %v", got)
	}
	if got := results[1].failReason(results[1].Results[0]); got != "known: because" {
		t.Fatalf("crud reason = %q", got)
	}
	if got := results[0].failReason(results[0].Results[2]); got != "boom" {
		t.Fatalf("unmatched reason = %q", got)
	}
	for _, bad := range []string{"nosuite\tx\ty\n", "crud\tx\n", "crud\t[\tz\n"} {
		if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadKnown(file); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestKnownProse: in a prose suite, a pattern without a slash matches the test function, and
// one with slashes a subtest path as go test names it.
func TestKnownProse(t *testing.T) {
	k := Known{
		{Suite: "handshake-prose", Pattern: "TestHandshakeProse", Reason: "container"},
		{Suite: "command-logging-prose", Pattern: "TestCommandLoggingAndMonitoringProse/3.?_Truncation_*", Reason: "timing"},
	}
	cases := []struct{ suite, test, want string }{
		{"handshake-prose", "TestHandshakeProse/1._valid_AWS", "container"},
		{"handshake-prose", "TestHandshakeProse", "container"},
		{"command-logging-prose", "TestCommandLoggingAndMonitoringProse/3.2_Truncation_with_multi-byte_codepoints", "timing"},
		{"command-logging-prose", "TestCommandLoggingAndMonitoringProse/1_Default_truncation_limit", ""},
	}
	for _, c := range cases {
		if got := k.reason(c.suite, c.test); got != c.want {
			t.Errorf("reason(%s, %s) = %q, want %q", c.suite, c.test, got, c.want)
		}
	}
}
