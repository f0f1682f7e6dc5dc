package compat

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// ev builds one line of test2json output.
func ev(action, test, output string) string {
	var b strings.Builder
	b.WriteString(`{"Action":"` + action + `"`)
	if test != "" {
		b.WriteString(`,"Test":` + quote(test))
	}
	if output != "" {
		b.WriteString(`,"Output":` + quote(output))
	}
	b.WriteString("}\n")
	return b.String()
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

var testSuite = Suite{Name: "crud", Pkg: unifiedPkg, Test: "TestUnifiedSpec", Sub: "crud/unified", Dirs: []string{"crud/unified"}}

const p = "TestUnifiedSpec/crud/unified/"

var mergeCases = []struct {
	name    string
	specs   []string // spec test names relative to the suite
	stream  string
	want    []Result
	wantErr string
}{
	{
		name:  "PassFailSkip",
		specs: []string{"a.json/ok", "a.json/bad", "a.json/old"},
		stream: ev("run", p+"a.json/ok", "") + ev("pass", p+"a.json/ok", "") +
			ev("run", p+"a.json/bad", "") +
			ev("output", p+"a.json/bad", "=== RUN   "+p+"a.json/bad\n") +
			ev("output", p+"a.json/bad", "    unified_spec_runner.go:185: error running operation \"find\" at index 0: boom\n") +
			ev("output", p+"a.json/bad", "--- FAIL: "+p+"a.json/bad (0.00s)\n") +
			ev("fail", p+"a.json/bad", "") +
			ev("output", p+"a.json/old", "    mongotest.go:147: skipping due to environmental constraints: x\n") +
			ev("skip", p+"a.json/old", "") + ev("fail", "", ""),
		want: []Result{
			{"a.json/ok", Pass, ""},
			{"a.json/bad", Fail, `error running operation "find" at index 0: boom`},
			{"a.json/old", Skip, "skipping due to environmental constraints: x"},
		},
	},
	{
		name:  "TestifyMessages",
		specs: []string{"b.json/t"},
		stream: ev("output", p+"b.json/t", "    mongotest.go:540: \n") +
			ev("output", p+"b.json/t", "        \tError Trace:\tx.go:1\n") +
			ev("output", p+"b.json/t", "        \tError:      \tExpected nil, but got: oops\n") +
			ev("output", p+"b.json/t", "        \tMessages:   \terror creating fail point: oops\n") +
			ev("fail", p+"b.json/t", ""),
		want: []Result{{"b.json/t", Fail, "error creating fail point: oops"}},
	},
	{
		name:  "FileSkipped",
		specs: []string{"c.json/one", "c.json/two"},
		stream: ev("output", p+"c.json", "    mongotest.go:147: skipping due to environmental constraints: topology\n") +
			ev("skip", p+"c.json", ""),
		want: []Result{
			{"c.json/one", Skip, "skipping due to environmental constraints: topology"},
			{"c.json/two", Skip, "skipping due to environmental constraints: topology"},
		},
	},
	{
		name:   "FileFailed",
		specs:  []string{"d.json/one"},
		stream: ev("output", p+"d.json", "    unified_spec_runner.go:120: error parsing test file\n") + ev("fail", p+"d.json", ""),
		want:   []Result{{"d.json/one", NotRun, "not reached: d.json: error parsing test file"}},
	},
	{
		name:  "SetupPanicked",
		specs: []string{"e.json/one"},
		stream: ev("output", "", "2026/01/02 03:04:05 error running find against config.shards: (CommandNotFound) no such command: 'find'\n") +
			ev("output", "", "panic: error running find against config.shards: (CommandNotFound) no such command: 'find'\n") +
			ev("output", "", "FAIL\tgo.mongodb.org/mongo-driver/mongo/integration/unified\t0.016s\n") + ev("fail", "", ""),
		want: []Result{{"e.json/one", NotRun,
			"panic: error running find against config.shards: (CommandNotFound) no such command: 'find'"}},
		wantErr: "panic: error running find against config.shards: (CommandNotFound) no such command: 'find'",
	},
	{
		name:  "TimedOut",
		specs: []string{"f.json/slow", "f.json/next"},
		// As go test -json really reports it: the panic is the running test's output.
		stream: ev("run", p+"f.json", "") + ev("run", p+"f.json/slow", "") + ev("fail", "", "") +
			ev("output", p+"f.json/slow", "panic: test timed out after 1m0s\n") +
			ev("output", p+"f.json/slow", "\trunning tests:\n"),
		want: []Result{
			{"f.json/slow", Fail, "interrupted: panic: test timed out after 1m0s"},
			{"f.json/next", NotRun, "interrupted: panic: test timed out after 1m0s"},
		},
		wantErr: "panic: test timed out after 1m0s",
	},
	{
		name:    "TeardownFailed",
		specs:   []string{"g.json/ok"},
		stream:  ev("pass", p+"g.json/ok", "") + ev("output", "", "2026/01/02 03:04:05 error dropping test database: nope\n") + ev("fail", "", ""),
		want:    []Result{{"g.json/ok", Pass, ""}},
		wantErr: "error dropping test database: nope",
	},
	{
		name:   "UnlistedTest",
		specs:  nil,
		stream: ev("run", p+"h.json", "") + ev("pass", p+"h.json/extra", "") + ev("pass", p+"h.json", "") + ev("pass", "", ""),
		want:   []Result{{"h.json/extra", Pass, ""}},
	},
}

func TestMerge(t *testing.T) {
	for _, tc := range mergeCases {
		t.Run(tc.name, func(t *testing.T) {
			run, err := parseEvents(strings.NewReader(tc.stream), nil)
			if err != nil {
				t.Fatal(err)
			}
			var specs []SpecTest
			for _, s := range tc.specs {
				specs = append(specs, SpecTest{File: parent(s), Name: s})
			}
			got := merge(testSuite, specs, run)
			if !reflect.DeepEqual(got.Results, tc.want) {
				t.Errorf("results:\n got %q\nwant %q", got.Results, tc.want)
			}
			if got.Err != tc.wantErr {
				t.Errorf("Err = %q, want %q", got.Err, tc.wantErr)
			}
		})
	}
}

var rewriteCases = []struct{ in, want string }{
	{"InsertOne with a non-existing document", "InsertOne_with_a_non-existing_document"},
	{"Aggregate with $out", "Aggregate_with_$out"},
	{"tab\there", "tab_here"},
	{"bell\a", `bell\a`},
	{"a/b", "a/b"},
}

func TestRewriteName(t *testing.T) {
	for _, tc := range rewriteCases {
		if got := rewriteName(tc.in); got != tc.want {
			t.Errorf("rewriteName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestUniqueNameMatchesTesting checks uniqueName against what package testing really does.
func TestUniqueNameMatchesTesting(t *testing.T) {
	names := []string{"x", "x", "x", "", "", "x#01"}
	var got, want []string
	seen := map[string]int{}
	for _, n := range names {
		got = append(got, uniqueName(seen, n))
		t.Run(n, func(t *testing.T) { want = append(want, t.Name()[len("TestUniqueNameMatchesTesting/"):]) })
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("uniqueName gave %q, package testing %q", got, want)
	}
}

func TestRunPattern(t *testing.T) {
	cases := map[string]string{
		"crud":               `^TestUnifiedSpec$/^crud$/^unified$/\.json$`,
		"command-monitoring": `^TestUnifiedSpec$/^command-monitoring$/\.json$`,
		"crud-legacy":        `^TestCrudSpec$/\.json$`,
	}
	for name, want := range cases {
		s, ok := suiteByName(name)
		if !ok {
			t.Fatalf("no suite %s", name)
		}
		if got := s.RunPattern(); got != want {
			t.Errorf("%s: RunPattern() = %s, want %s", name, got, want)
		}
	}
}

func TestSelectSuites(t *testing.T) {
	got, err := SelectSuites("target,crud,sessions")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	want := append(append([]string{}, TargetSuites...), "sessions")
	if !reflect.DeepEqual(names, want) {
		t.Errorf("got %v, want %v", names, want)
	}
	if _, err := SelectSuites("nope"); err == nil {
		t.Error("unknown suite accepted")
	}
}

var skipKindCases = []struct{ in, want string }{
	{`skipping due to environmental constraints: no matching RunOnBlock; comparison errors: [server version "7.0.16" is higher than max version "4.4.99"]`,
		"runOnRequirements: server newer than maxServerVersion"},
	{`skipping due to environmental constraints: no matching RunOnBlock; comparison errors: [topology kind "sharded" does not match any of the required kinds ["single" "replicaset"] server version "7.0.16" is lower than min required version "8.0"]`,
		"runOnRequirements: server older than minServerVersion or topology not in [single replicaset]"},
	{`skipping for reason: "aggregate comments are string-only"`, `skipping for reason: "aggregate comments are string-only"`},
}

func TestSkipKind(t *testing.T) {
	for _, tc := range skipKindCases {
		if got := skipKind(tc.in); got != tc.want {
			t.Errorf("skipKind(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestReplaceBetweenMarkers(t *testing.T) {
	doc := "# cleave\n\n" + BeginMarker + "\nold\ntable\n" + EndMarker + "\nafter\n"
	got, err := replaceBetweenMarkers(doc, "new")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# cleave\n\n" + BeginMarker + "\nnew\n" + EndMarker + "\nafter\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := replaceBetweenMarkers("no markers", "x"); err == nil {
		t.Error("no error without markers")
	}
}

// TestCompatibilityDocMarkers: docs/compatibility.md, which `make compat` rewrites, holds the
// markers of the table once each, in order.
func TestCompatibilityDocMarkers(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "compatibility.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	if strings.Count(doc, BeginMarker) != 1 || strings.Count(doc, EndMarker) != 1 ||
		strings.Index(doc, BeginMarker) > strings.Index(doc, EndMarker) {
		t.Errorf("docs/compatibility.md: want one %s, then one %s", BeginMarker, EndMarker)
	}
}

func TestBaselineDiffUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baseline.txt")
	b := Baseline{}
	b.add("crud", "a.json/kept")
	b.add("crud", "a.json/lost")
	b.add("sessions", "s.json/untouched")
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	b, err := ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	results := []SuiteResult{{Suite: "crud", Results: []Result{
		{"a.json/kept", Pass, ""}, {"a.json/lost", Fail, "boom"}, {"a.json/new", Pass, ""},
	}}}
	reg, gains, excused := b.Diff(results)
	if want := []string{"crud\ta.json/lost: fail: boom"}; !reflect.DeepEqual(reg, want) {
		t.Errorf("regressions %q, want %q", reg, want)
	}
	if want := []string{"crud\ta.json/new"}; !reflect.DeepEqual(gains, want) {
		t.Errorf("gains %q, want %q", gains, want)
	}
	if len(excused) > 0 {
		t.Errorf("excused %q without known reasons", excused)
	}
	// With a known reason for it, the failing baseline test is excused, not a regression.
	Known{{Suite: "crud", Pattern: "a.json/lost", Reason: "flaky"}}.Apply(results)
	reg, _, excused = b.Diff(results)
	if want := []string{"crud\ta.json/lost: fail: known: flaky"}; len(reg) > 0 || !reflect.DeepEqual(excused, want) {
		t.Errorf("with a known reason: regressions %q, excused %q, want none and %q", reg, excused, want)
	}
	b.Update(results, true)
	want := Baseline{"crud": {"a.json/kept": true, "a.json/new": true}, "sessions": {"s.json/untouched": true}}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("after prune: %v, want %v", b, want)
	}
}

// TestMergeRealTimeout parses what go test -json printed for a test binary that timed out
// (recorded with Go 1.26): f.json/slow was running, f.json/next never started.
func TestMergeRealTimeout(t *testing.T) {
	raw, err := os.ReadFile("testdata/gotest-timeout.json")
	if err != nil {
		t.Fatal(err)
	}
	run, err := parseEvents(bytes.NewReader(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := Suite{Name: "timeout", Test: "TestA"}
	got := merge(s, []SpecTest{{"f.json", "f.json/slow"}, {"f.json", "f.json/next"}}, run)
	const why = "interrupted: panic: test timed out after 1s"
	want := []Result{{"f.json/slow", Fail, why}, {"f.json/next", NotRun, why}}
	if !reflect.DeepEqual(got.Results, want) {
		t.Errorf("results:\n got %q\nwant %q", got.Results, want)
	}
	if got.Err != "panic: test timed out after 1s" {
		t.Errorf("Err = %q", got.Err)
	}
}
