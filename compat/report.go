package compat

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// Counts summarises a suite.
type Counts struct {
	Tests, Passed, Failed, NotRun, Skipped int
}

// Ran is the number of tests that ran to an end.
func (c Counts) Ran() int { return c.Passed + c.Failed }

// PassRate is passed over the tests that were not skipped, in percent, or -1 if none.
func (c Counts) PassRate() float64 {
	n := c.Tests - c.Skipped
	if n == 0 {
		return -1
	}
	return 100 * float64(c.Passed) / float64(n)
}

// Counts counts the results.
func (s SuiteResult) Counts() Counts {
	c := Counts{Tests: len(s.Results)}
	for _, r := range s.Results {
		switch r.Status {
		case Pass:
			c.Passed++
		case Fail:
			c.Failed++
		case NotRun:
			c.NotRun++
		case Skip:
			c.Skipped++
		}
	}
	return c
}

// reasonCount is a reason and how many tests gave it.
type reasonCount struct {
	Reason string
	N      int
}

// reasons groups the reasons of the results with the given statuses, as summarised by key,
// most frequent first.
func (s SuiteResult) reasons(key func(string) string, statuses ...Status) []reasonCount {
	m := map[string]int{}
	for _, r := range s.Results {
		for _, st := range statuses {
			if r.Status == st {
				m[key(s.failReason(r))]++
			}
		}
	}
	out := make([]reasonCount, 0, len(m))
	for k, n := range m {
		out = append(out, reasonCount{k, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

func formatRate(c Counts) string {
	r := c.PassRate()
	if r < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", r)
}

// Total adds the counts of all suites.
func Total(results []SuiteResult) Counts {
	var t Counts
	for _, s := range results {
		c := s.Counts()
		t.Tests += c.Tests
		t.Passed += c.Passed
		t.Failed += c.Failed
		t.NotRun += c.NotRun
		t.Skipped += c.Skipped
	}
	return t
}

// WriteText prints the summary table, then for each suite every test that did not pass with its
// reason (verbose also lists the passes).
func WriteText(w io.Writer, results []SuiteResult, verbose bool) error {
	var b bytes.Buffer
	for _, s := range results {
		if s.Err != "" {
			fmt.Fprintf(&b, "\n== %s: runner error: %s\n", s.Suite, s.Err)
		} else {
			fmt.Fprintf(&b, "\n== %s\n", s.Suite)
		}
		for _, r := range s.Results {
			if r.Status == Pass && !verbose {
				continue
			}
			switch why := s.Known[r.Name]; {
			case r.Reason == "":
				fmt.Fprintf(&b, "%-6s %s\n", strings.ToUpper(string(r.Status)), r.Name)
			case why != "":
				fmt.Fprintf(&b, "%-6s %s: known: %s: %s\n", strings.ToUpper(string(r.Status)), r.Name, why, r.Reason)
			default:
				fmt.Fprintf(&b, "%-6s %s: %s\n", strings.ToUpper(string(r.Status)), r.Name, r.Reason)
			}
		}
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	// tabwriter keeps the first write error and returns it from Flush.
	row := func(format string, args ...any) { _, _ = fmt.Fprintf(tw, format, args...) }
	row("suite\ttests\tran\tpassed\tfailed\tnot run\tskipped\tpass %%\ttime\t\n")
	for _, s := range results {
		c := s.Counts()
		row("%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%.0fs\t\n", s.Suite, c.Tests, c.Ran(), c.Passed, c.Failed,
			c.NotRun, c.Skipped, formatRate(c), s.Elapsed.Seconds())
	}
	t := Total(results)
	row("total\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\t\n", t.Tests, t.Ran(), t.Passed, t.Failed, t.NotRun, t.Skipped, formatRate(t))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Markdown renders the table of docs/compatibility.md: the counts per suite, then per suite the skip
// reasons and the most frequent failure reasons. It holds no timings, so the same server gives
// the same text.
func Markdown(results []SuiteResult, driverVersion string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Spec tests of go.mongodb.org/mongo-driver %s run by its own runners (`make compat`), and "+
		"its prose tests: the suites named *-prose run the driver's Go test functions for the specs' prose "+
		"tests, one test per leaf subtest. pass %% = passed / (tests − skipped). Skipped tests are those whose "+
		"runOnRequirements (or, for prose tests, mtest's requirements) reject the deployment (cleave presents "+
		"itself as a sharded cluster of MongoDB 7.0) and those the spec or the driver skips.\n\n", driverVersion)
	b.WriteString("| suite | tests | ran | passed | failed | not run | skipped | pass % |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, s := range results {
		c := s.Counts()
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %s |\n", s.Suite, c.Tests, c.Ran(), c.Passed, c.Failed,
			c.NotRun, c.Skipped, formatRate(c))
	}
	t := Total(results)
	fmt.Fprintf(&b, "| **total** | %d | %d | %d | %d | %d | %d | %s |\n", t.Tests, t.Ran(), t.Passed, t.Failed, t.NotRun,
		t.Skipped, formatRate(t))
	b.WriteString("\n<details><summary>Why tests were skipped or failed</summary>\n\n")
	for _, s := range results {
		skips, fails := s.reasons(skipKind, Skip), s.reasons(failKind, Fail, NotRun)
		if len(skips) == 0 && len(fails) == 0 && s.Err == "" {
			continue
		}
		fmt.Fprintf(&b, "**%s**", s.Suite)
		if s.Err != "" {
			fmt.Fprintf(&b, " (runner error: %s)", mdEscape(s.Err))
		}
		b.WriteString("\n\n")
		writeReasons(&b, "skipped", skips, 0)
		if slices.Contains(TargetSuites, s.Suite) {
			writeFailures(&b, s) // the suites: every failing test with its reason
		} else {
			writeReasons(&b, "failed or not run (most frequent)", fails, 5)
		}
	}
	b.WriteString("</details>\n")
	return b.String()
}

func writeReasons(b *strings.Builder, title string, rs []reasonCount, limit int) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(b, "| tests | %s |\n| ---: | --- |\n", title)
	for i, r := range rs {
		if limit > 0 && i == limit {
			rest := 0
			for _, r := range rs[i:] {
				rest += r.N
			}
			fmt.Fprintf(b, "| %d | (%d other reasons) |\n", rest, len(rs)-i)
			break
		}
		fmt.Fprintf(b, "| %d | %s |\n", r.N, mdEscape(r.Reason))
	}
	b.WriteString("\n")
}

// writeFailures lists every test of s that failed or did not run, by name, with its reason.
func writeFailures(b *strings.Builder, s SuiteResult) {
	var failed []Result
	for _, r := range s.Results {
		if r.Status == Fail || r.Status == NotRun {
			failed = append(failed, r)
		}
	}
	if len(failed) == 0 {
		return
	}
	sort.Slice(failed, func(i, j int) bool { return failed[i].Name < failed[j].Name })
	b.WriteString("| failed or not run | reason |\n| --- | --- |\n")
	for _, r := range failed {
		fmt.Fprintf(b, "| %s | %s |\n", mdEscape(r.Name), mdEscape(s.failReason(r)))
	}
	b.WriteString("\n")
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "\n", " ").Replace(s)
}

// The markers of docs/compatibility.md between which Markdown's output goes.
const (
	BeginMarker = "<!-- compat:begin -->"
	EndMarker   = "<!-- compat:end -->"
)

// RewriteDoc replaces what lies between the markers in the file at path.
func RewriteDoc(path, table string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := replaceBetweenMarkers(string(old), table)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(updated), 0o644)
}

func replaceBetweenMarkers(doc, content string) (string, error) {
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	if i < 0 || j < i {
		return "", errors.New("no " + BeginMarker + " ... " + EndMarker + " region")
	}
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return doc[:i+len(BeginMarker)] + "\n" + content + doc[j:], nil
}

var (
	runOnChecks = []struct {
		re   *regexp.Regexp
		kind string // $1 expands to the first group
	}{
		{regexp.MustCompile(`is higher than max version`), "server newer than maxServerVersion"},
		{regexp.MustCompile(`is lower than min required version`), "server older than minServerVersion"},
		{regexp.MustCompile(`required kinds \[([^\]]*)\]`), "topology not in [$1]"},
		{regexp.MustCompile(`server parameter|support parameter`), "serverParameters"},
		{regexp.MustCompile(`requires auth`), "auth"},
		{regexp.MustCompile(`serverless`), "serverless"},
		{regexp.MustCompile(`CSFLE`), "CSFLE"},
	}
	setupColl  = regexp.MustCompile(`^error setting up collection "[^"]*": `)
	createColl = regexp.MustCompile(`^error creating collection or view: .* on server: `)
)

// skipKind summarises a skip reason for the table: which runOnRequirements excluded the test
// (without the version numbers, which differ per file), or the skip message itself.
func skipKind(reason string) string {
	if !strings.Contains(reason, "environmental constraints") {
		return reason
	}
	var kinds []string
	seen := map[string]bool{}
	for _, c := range runOnChecks {
		for _, m := range c.re.FindAllStringSubmatchIndex(reason, -1) {
			k := string(c.re.ExpandString(nil, c.kind, reason, m))
			k = strings.ReplaceAll(k, `"`, "")
			if !seen[k] {
				seen[k] = true
				kinds = append(kinds, k)
			}
		}
	}
	if len(kinds) == 0 {
		return reason
	}
	return "runOnRequirements: " + strings.Join(kinds, " or ")
}

// failKind summarises a failure for the table: the runners' setup messages lose the name of
// the collection they were preparing, so that one missing command is one line.
func failKind(reason string) string {
	reason = setupColl.ReplaceAllString(reason, "setting up initialData: ")
	return createColl.ReplaceAllString(reason, "creating the test collection: ")
}
