package compat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The driver packages whose tests run the spec files.
const (
	driverModule   = "go.mongodb.org/mongo-driver"
	unifiedPkg     = driverModule + "/mongo/integration/unified" // unified test format runner
	integrationPkg = driverModule + "/mongo/integration"         // legacy-format runners
)

// Suite is one spec directory (or a few) and the go test that runs it, or a group of prose
// tests: Go test functions of the driver with no spec file behind them.
type Suite struct {
	Name string
	Pkg  string   // import path of the package holding the runner
	Test string   // top-level test function; "" for a prose suite
	Sub  string   // subtest path under Test naming the directory ("crud/unified"); "" if none
	Dirs []string // spec directories under the driver's testdata/, in the order the runner reads them
	// Funcs are a prose suite's top-level test functions. Its tests are what go test reports
	// under them: every leaf subtest, or the function itself when it has none.
	Funcs []string
	// DockerRunning: when compat runs in a Docker container, tell the driver's tests so
	// (DOCKER_RUNNING=true), for the tests whose outcome depends on it (see Runner.goTest).
	DockerRunning bool
}

// spec is a suite of spec files run by the test function test (and its subtest path sub).
func spec(name, pkg, test, sub string, dirs ...string) Suite {
	return Suite{Name: name, Pkg: pkg, Test: test, Sub: sub, Dirs: dirs}
}

// prose is a suite of prose tests: the given test functions of mongo/integration.
func prose(name string, funcs ...string) Suite {
	return Suite{Name: name, Pkg: integrationPkg, Funcs: funcs}
}

// IsProse reports whether s is a prose suite.
func (s Suite) IsProse() bool { return len(s.Funcs) > 0 }

// Suites is every suite compat knows, in report order; TargetSuites are the CI target.
var Suites = []Suite{
	spec("crud", unifiedPkg, "TestUnifiedSpec", "crud/unified", "crud/unified"),
	spec("collection-management", unifiedPkg, "TestUnifiedSpec", "collection-management", "collection-management"),
	spec("index-management", unifiedPkg, "TestUnifiedSpec", "index-management", "index-management"),
	spec("command-monitoring", unifiedPkg, "TestUnifiedSpec", "command-monitoring", "command-monitoring"),
	spec("command-logging", unifiedPkg, "TestUnifiedSpec", "command-monitoring/logging", "command-monitoring/logging"),
	spec("run-command", unifiedPkg, "TestUnifiedSpec", "run-command", "run-command"),
	spec("sessions", unifiedPkg, "TestUnifiedSpec", "sessions", "sessions"),
	spec("transactions", unifiedPkg, "TestUnifiedSpec", "transactions/unified", "transactions/unified"),
	spec("retryable-writes", unifiedPkg, "TestUnifiedSpec", "retryable-writes/unified", "retryable-writes/unified"),
	spec("change-streams", unifiedPkg, "TestUnifiedSpec", "change-streams", "change-streams"),
	spec("versioned-api", unifiedPkg, "TestUnifiedSpec", "versioned-api", "versioned-api"),
	spec("unified-format", unifiedPkg, "TestUnifiedSpec", "unified-test-format/valid-pass", "unified-test-format/valid-pass"),
	spec("gridfs", unifiedPkg, "TestUnifiedSpec", "gridfs", "gridfs"),
	// Legacy-format suites, run by the runners in mongo/integration.
	spec("retryable-reads", integrationPkg, "TestUnifiedSpecs", "retryable-reads", "retryable-reads"),
	spec("retryable-writes-legacy", integrationPkg, "TestRetryableWritesSpec", "", "retryable-writes/legacy"),
	spec("transactions-legacy", integrationPkg, "TestUnifiedSpecs", "transactions/legacy", "transactions/legacy"),
	spec("convenient-transactions", integrationPkg, "TestUnifiedSpecs", "convenient-transactions", "convenient-transactions"),
	spec("crud-legacy", integrationPkg, "TestCrudSpec", "", "crud/v1/read", "crud/v1/write"),
	// Prose suites: every test function of mongo/integration (and TestConvenientTransactions of
	// mongo) that implements a spec's prose tests, by spec. The tests skip by themselves what
	// needs another topology (replica set, standalone, load balancer), another server version
	// or Atlas. Not listed: the CSFLE prose tests (TestClientSideEncryptionProse,
	// TestCSOTClientSideEncryptionProse, TestSessionsMongocryptdProse), which build only with
	// the cse tag and libmongocrypt.
	prose("crud-prose", "TestWriteErrorsWithLabels", "TestWriteErrorsDetails", "TestHintErrors",
		"TestWriteConcernError", "TestErrorsCodeNamePropagated"),
	prose("retryable-reads-prose", "TestRetryableReadsProse"),
	prose("retryable-writes-prose", "TestRetryableWritesProse"),
	prose("sessions-prose", "TestSessionsProse"),
	prose("causal-consistency-prose", "TestCausalConsistency_Supported", "TestCausalConsistency_NotSupported"),
	prose("transactions-prose", "TestMongosPinning"),
	{Name: "convenient-transactions-prose", Pkg: driverModule + "/mongo", Funcs: []string{"TestConvenientTransactions"}},
	prose("command-logging-prose", "TestCommandLoggingAndMonitoringProse"),
	prose("csot-prose", "TestCSOTProse"),
	prose("gridfs-prose", "TestGridFSProse"),
	{Name: "handshake-prose", Pkg: integrationPkg, Funcs: []string{"TestHandshakeProse"}, DockerRunning: true},
	prose("sdam-prose", "TestSDAMProse", "TestServerHeartbeatStartedEvent", "TestConnectionsSurvivePrimaryStepDown"),
	prose("server-selection-prose", "TestServerSelectionProse"),
	prose("change-streams-prose", "TestChangeStream_ReplicaSet"),
	prose("load-balancer-atlas-prose", "TestLoadBalancerSupport", "TestSearchIndexProse", "TestAtlasDataLake"),
}

// TargetSuites are the suites CI checks against the baseline: the first four spec suites, and
// the prose suites that run quickly and without timing of their own (about 20 s together).
var TargetSuites = []string{"crud", "collection-management", "index-management", "command-monitoring",
	"sessions-prose", "causal-consistency-prose", "retryable-reads-prose", "retryable-writes-prose", "transactions-prose"}

// SelectSuites resolves a comma-separated list of suite names; "all", "target" and "prose"
// (every prose suite) are shorthands.
func SelectSuites(list string) ([]Suite, error) {
	var out []Suite
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		var names []string
		switch name {
		case "":
			continue
		case "all":
			for _, s := range Suites {
				names = append(names, s.Name)
			}
		case "target":
			names = TargetSuites
		case "prose":
			for _, s := range Suites {
				if s.IsProse() {
					names = append(names, s.Name)
				}
			}
		default:
			names = []string{name}
		}
		for _, n := range names {
			s, ok := suiteByName(n)
			if !ok {
				return nil, fmt.Errorf("unknown suite %q (known: %s)", n, strings.Join(suiteNames(), ", "))
			}
			if !seen[n] {
				seen[n] = true
				out = append(out, s)
			}
		}
	}
	return out, nil
}

func suiteByName(name string) (Suite, bool) {
	for _, s := range Suites {
		if s.Name == name {
			return s, true
		}
	}
	return Suite{}, false
}

func suiteNames() []string {
	names := make([]string, len(Suites))
	for i, s := range Suites {
		names[i] = s.Name
	}
	return names
}

// prefix is the go test name every test of the suite starts with, slash included.
func (s Suite) prefix() string {
	if s.Sub == "" {
		return s.Test + "/"
	}
	return s.Test + "/" + s.Sub + "/"
}

// RunPattern is the go test -run pattern selecting exactly this suite: one anchored regexp per
// name level, and a last level matching the file names so that "command-monitoring" does not
// also select its "logging" sub-directory. A prose suite's pattern selects its functions.
func (s Suite) RunPattern() string {
	if s.IsProse() {
		return funcsPattern(s.Funcs)
	}
	levels := []string{s.Test}
	if s.Sub != "" {
		levels = append(levels, strings.Split(s.Sub, "/")...)
	}
	parts := make([]string, len(levels), len(levels)+1)
	for i, l := range levels {
		parts[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	parts = append(parts, `\.json$`)
	return strings.Join(parts, "/")
}

// levelPattern is the -run pattern selecting the given names below the suite's directory: a
// file, or a file and one of its tests.
func (s Suite) levelPattern(names ...string) string {
	levels := []string{s.Test}
	if s.Sub != "" {
		levels = append(levels, strings.Split(s.Sub, "/")...)
	}
	for _, n := range names {
		// A subtest name may hold slashes, which go test treats as levels too.
		levels = append(levels, strings.Split(n, "/")...)
	}
	parts := make([]string, len(levels))
	for i, l := range levels {
		parts[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	return strings.Join(parts, "/")
}

// SpecTest is one test case read from a spec file: the file, and the test's name relative to
// the suite as go test spells it ("insertOne.json/InsertOne_with_a_non-existing_document").
type SpecTest struct {
	File string
	Name string
}

// SpecTests lists the tests of the suite's spec files in driverDir, named the way the runner's
// t.Run calls will name them.
func (s Suite) SpecTests(driverDir string) ([]SpecTest, error) {
	var out []SpecTest
	files := map[string]int{}
	for _, dir := range s.Dirs {
		entries, err := os.ReadDir(filepath.Join(driverDir, "testdata", dir))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() || filepath.Ext(e.Name()) != ".json" {
				continue
			}
			raw, err := os.ReadFile(filepath.Join(driverDir, "testdata", dir, e.Name()))
			if err != nil {
				return nil, err
			}
			var f struct {
				Tests []struct {
					Description string `json:"description"`
				} `json:"tests"`
			}
			if err := json.Unmarshal(raw, &f); err != nil {
				return nil, fmt.Errorf("%s/%s: %w", dir, e.Name(), err)
			}
			// Two directories may hold the same file name (crud/v1/read and write): go test
			// then names the second one file.json#01.
			file := uniqueName(files, rewriteName(e.Name()))
			names := map[string]int{}
			for _, t := range f.Tests {
				out = append(out, SpecTest{File: file, Name: file + "/" + uniqueName(names, rewriteName(t.Description))})
			}
		}
	}
	return out, nil
}

// rewriteName spells a subtest name the way package testing does: spaces become underscores
// and unprintable runes are escaped.
func rewriteName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case isSpace(r):
			b.WriteByte('_')
		case !strconv.IsPrint(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isSpace is package testing's list of runes it replaces with '_'.
func isSpace(r rune) bool {
	if r < 0x2000 {
		switch r {
		case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0, 0x1680:
			return true
		}
		return false
	}
	if r <= 0x200a {
		return true
	}
	switch r {
	case 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return false
}

// uniqueName disambiguates a repeated subtest name with #01, #02... exactly as package
// testing does (seen is keyed by name under one parent).
func uniqueName(seen map[string]int, name string) string {
	empty := name == ""
	for {
		next, exists := seen[name]
		if !empty && !exists {
			seen[name] = 1
			return name
		}
		seen[name] = next + 1
		name = fmt.Sprintf("%s#%02d", name, next)
		empty = false
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
