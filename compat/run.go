package compat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// Status is how one test ended.
type Status string

// The statuses, in report order.
const (
	Pass   Status = "pass"
	Fail   Status = "fail"
	NotRun Status = "notrun" // never reached: setup failed, or the test binary crashed or timed out
	Skip   Status = "skip"
)

// Result is one test's outcome. Name is relative to the suite ("find.json/Find_with_filter").
type Result struct {
	Name   string
	Status Status
	Reason string // one line; empty for a pass
}

// SuiteResult is the outcome of one suite.
type SuiteResult struct {
	Suite   string
	Results []Result
	Elapsed time.Duration
	Err     string // why the runner failed as a whole (setup, build, timeout), one line; "" if it did not
	// Known maps failing tests to the reason testdata/known.txt gives for them (Known.Apply).
	Known map[string]string `json:",omitempty"`
}

// Runner runs suites with go test in the compat module.
type Runner struct {
	ModuleDir string        // the compat module's root: go test runs there, so go.mod pins the driver
	URI       string        // MONGODB_URI for the driver's test framework
	Timeout   time.Duration // go test -timeout for one suite
	Log       io.Writer     // if not nil, receives the raw test output as it arrives
}

// DriverDir returns the directory and version of the pinned driver module (downloading it if
// needed).
func (r *Runner) DriverDir(ctx context.Context) (dir, version string, err error) {
	out, err := r.goCmd(ctx, "mod", "download", "-json", driverModule).Output()
	if err != nil {
		return "", "", fmt.Errorf("go mod download %s: %w", driverModule, cmdErr(err))
	}
	var m struct{ Dir, Version, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", "", err
	}
	if m.Error != "" || m.Dir == "" {
		return "", "", fmt.Errorf("go mod download %s: %s", driverModule, m.Error)
	}
	return m.Dir, m.Version, nil
}

// Run runs one suite and returns one result per test: per test of its spec files, or for a
// prose suite per test go test reported (see proseResults).
//
// Two things in the driver's runners would otherwise lose tests. Their TestMain sometimes reads
// the topology before its monitor has heard from the server ("could not detect topology kind"),
// so a run that fails before any test starts is tried again. And the legacy runners index
// results they have just asserted on, so a wrong answer can panic and end the test binary: the
// tests a crash left unreached are run again file by file, then test by test (a prose suite's
// function by function), and the crash stays in SuiteResult.Err.
func (r *Runner) Run(ctx context.Context, driverDir string, s Suite) (SuiteResult, error) {
	start := time.Now()
	var res SuiteResult
	var err error
	if s.IsProse() {
		res, err = r.runProse(ctx, s)
	} else {
		res, err = r.runSpecs(ctx, driverDir, s)
	}
	res.Elapsed = time.Since(start)
	return res, err
}

func (r *Runner) runSpecs(ctx context.Context, driverDir string, s Suite) (SuiteResult, error) {
	specs, err := s.SpecTests(driverDir)
	if err != nil {
		return SuiteResult{}, err
	}
	run, err := r.firstRun(ctx, s)
	if err != nil {
		return SuiteResult{}, err
	}
	res := merge(s, specs, run)
	if crashed(run) {
		if err := r.rerunUnreached(ctx, s, specs, &res); err != nil {
			return SuiteResult{}, err
		}
	}
	return res, nil
}

// firstRun runs the whole suite, again if the test binary died in TestMain (see Run).
func (r *Runner) firstRun(ctx context.Context, s Suite) (*testRun, error) {
	var run *testRun
	var err error
	for attempt := 0; attempt < setupAttempts; attempt++ {
		if run, err = r.goTest(ctx, s, s.RunPattern()); err != nil {
			return nil, err
		}
		if len(run.tests) > 0 || !strings.HasPrefix(pkgFailure(run), "panic: ") {
			break
		}
	}
	return run, nil
}

const setupAttempts = 3

// crashed reports whether the binary died in the middle of the tests (not in TestMain, and not
// of a timeout, which a rerun would only repeat).
func crashed(run *testRun) bool {
	why := pkgFailure(run)
	return len(run.tests) > 0 && strings.HasPrefix(why, "panic: ") && !strings.Contains(why, "test timed out")
}

// rerunUnreached runs the files holding not-run tests again, one go test per file, and the
// tests still unreached after that (the file crashed again) one by one.
func (r *Runner) rerunUnreached(ctx context.Context, s Suite, specs []SpecTest, res *SuiteResult) error {
	index := map[string]int{}
	for i, x := range res.Results {
		index[x.Name] = i
	}
	unreached := func(names []SpecTest) []SpecTest {
		var out []SpecTest
		for _, sp := range names {
			if i, ok := index[sp.Name]; ok && res.Results[i].Status == NotRun {
				out = append(out, sp)
			}
		}
		return out
	}
	update := func(pattern string, subset []SpecTest) (bool, error) {
		run, err := r.goTest(ctx, s, pattern)
		if err != nil {
			return false, err
		}
		for _, x := range merge(s, subset, run).Results {
			if i, ok := index[x.Name]; ok && res.Results[i].Status == NotRun {
				res.Results[i] = x
			}
		}
		return crashed(run), nil
	}
	var files []string
	byFile := map[string][]SpecTest{}
	for _, sp := range unreached(specs) {
		if byFile[sp.File] == nil {
			files = append(files, sp.File)
		}
		byFile[sp.File] = append(byFile[sp.File], sp)
	}
	for _, f := range files {
		again, err := update(s.levelPattern(f), byFile[f])
		if err != nil {
			return err
		}
		if !again {
			continue
		}
		for _, sp := range unreached(byFile[f]) {
			if _, err := update(s.levelPattern(f, strings.TrimPrefix(sp.Name, sp.File+"/")), []SpecTest{sp}); err != nil {
				return err
			}
		}
	}
	return nil
}

// goTest runs go test -json on the suite's package with the -run pattern and parses what it
// reports.
func (r *Runner) goTest(ctx context.Context, s Suite, pattern string) (*testRun, error) {
	// One test at a time: the parallel subtests of some prose tests (command logging's, which
	// build 150 KB strings for seconds each inside a 10 s deadline) otherwise race their own
	// deadlines for the few cores they share with cleave.
	args := []string{"test", "-json", "-count=1", "-parallel", "1", "-run", pattern}
	if r.Timeout > 0 {
		args = append(args, "-timeout", r.Timeout.String())
	}
	cmd := r.goCmd(ctx, append(args, s.Pkg)...)
	cmd.Env = append(cmd.Env, "MONGODB_URI="+r.URI)
	// In a container the driver adds env.container to its handshake metadata, which the
	// handshake prose tests do not expect; the driver's own image says so with DOCKER_RUNNING
	// (its Dockerfile sets it), and those tests then skip.
	if s.DockerRunning && inContainer() {
		cmd.Env = append(cmd.Env, "DOCKER_RUNNING=true")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	run, perr := parseEvents(stdout, r.Log)
	werr := cmd.Wait() // a non-zero exit only says that some test failed
	if perr != nil {
		return nil, perr
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if werr != nil && len(run.tests) == 0 && len(run.pkgOutput) == 0 {
		run.pkgOutput = strings.SplitAfter(stderr.String(), "\n")
	}
	return run, nil
}

// goCmd is a go command in the compat module, with the environment variables the driver's test
// framework reads for other deployments (auth, TLS, serverless, load balancers) removed, so that
// only the URI decides what is tested.
func (r *Runner) goCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = r.ModuleDir
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	for _, kv := range os.Environ() {
		if !driverEnv[strings.SplitN(kv, "=", 2)[0]] {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// inContainer reports whether compat runs in a Docker container: DOCKER_RUNNING says so, or
// the file whose presence tells the driver so exists.
func inContainer() bool {
	if os.Getenv("DOCKER_RUNNING") != "" {
		return true
	}
	_, err := os.Stat("/.dockerenv")
	return err == nil
}

var driverEnv = map[string]bool{
	"MONGODB_URI": true, "AUTH": true, "SSL": true, "SERVERLESS": true, "REQUIRE_API_VERSION": true,
	"MONGO_GO_DRIVER_COMPRESSOR": true, "MONGO_GO_DRIVER_CA_FILE": true, "ATLAS_DATA_LAKE_INTEGRATION_TEST": true,
	"SINGLE_MONGOS_LB_URI": true, "MULTI_MONGOS_LB_URI": true, "SKIP_CSOT_TESTS": true, "DOCKER_RUNNING": true,
}

func cmdErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, firstLine(string(ee.Stderr)))
	}
	return err
}

// testRun is what a go test -json stream said.
type testRun struct {
	tests     map[string]*testState // by full test name
	order     []string              // the test names in the order they first appeared
	pkgOutput []string              // output not attributed to a test (TestMain, panics, build errors)
	pkgAction string                // the package's final action: pass, fail, skip
}

type testState struct {
	action string // last terminal action: pass, fail, skip; "" while running
	output []string
}

// event is one line of test2json output.
type event struct {
	Action string
	Test   string
	Output string
}

// parseEvents reads a go test -json stream; log, if not nil, receives the output text.
func parseEvents(rd io.Reader, log io.Writer) (*testRun, error) {
	run := &testRun{tests: map[string]*testState{}}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Action == "" {
			// Not test2json (e.g. a go command message): keep it as package output.
			run.pkgOutput = append(run.pkgOutput, string(line)+"\n")
			continue
		}
		if log != nil && ev.Output != "" {
			_, _ = io.WriteString(log, ev.Output)
		}
		if ev.Test == "" {
			switch ev.Action {
			case "output", "build-output":
				run.pkgOutput = append(run.pkgOutput, ev.Output)
			case "pass", "fail", "skip":
				run.pkgAction = ev.Action
			}
			continue
		}
		st := run.tests[ev.Test]
		if st == nil {
			st = &testState{}
			run.tests[ev.Test] = st
			run.order = append(run.order, ev.Test)
		}
		switch ev.Action {
		case "output":
			st.output = append(st.output, ev.Output)
		case "pass", "fail", "skip":
			st.action = ev.Action
		}
	}
	return run, sc.Err()
}

// merge turns the stream into one result per spec test. A test with no events of its own takes
// its outcome from the nearest ancestor that has one: a skipped file skips its tests, a failed
// file (or a failed TestMain) means they never ran.
func merge(s Suite, specs []SpecTest, run *testRun) SuiteResult {
	res := SuiteResult{Suite: s.Name}
	pkgReason := pkgFailure(run)
	if pkgReason != "" {
		res.Err = pkgReason
	}
	prefix := s.prefix()
	known := map[string]bool{}
	for _, sp := range specs {
		full := prefix + sp.Name
		known[full] = true
		res.Results = append(res.Results, outcome(sp.Name, full, run, pkgReason))
	}
	// Tests the runner reported that the spec files do not list (a runner adding its own
	// subtests, or a name spelled differently from what we expect): report them too, leaves only.
	for _, name := range sortedKeys(run.tests) {
		if !strings.HasPrefix(name, prefix) || known[name] || hasChild(run, name) || isAncestorOfKnown(name, known) {
			continue
		}
		res.Results = append(res.Results, outcome(strings.TrimPrefix(name, prefix), name, run, pkgReason))
	}
	return res
}

func outcome(rel, full string, run *testRun, pkgReason string) Result {
	r := Result{Name: rel}
	if st := run.tests[full]; st != nil {
		switch st.action {
		case "pass":
			r.Status = Pass
		case "skip":
			r.Status, r.Reason = Skip, reason(st.output)
		case "fail":
			r.Status, r.Reason = Fail, reason(st.output)
			if r.Reason == "" {
				r.Reason = "failed without a message"
			}
		default: // started but never ended: the binary died under it
			r.Status, r.Reason = Fail, "interrupted: "+orDefault(pkgReason, "test binary exited")
		}
		return r
	}
	for anc := parent(full); anc != ""; anc = parent(anc) {
		st := run.tests[anc]
		if st == nil {
			continue
		}
		switch st.action {
		case "skip":
			r.Status, r.Reason = Skip, reason(st.output)
		case "fail":
			// An ancestor fails with its own message (a file that does not parse), or without
			// one because a crash ended it.
			r.Status = NotRun
			if why := reason(st.output); why != "" {
				r.Reason = "not reached: " + lastElem(anc) + ": " + why
			} else {
				r.Reason = "not reached: " + orDefault(pkgReason, "an enclosing test failed")
			}
		case "pass": // an ancestor passed without running it: the runner did not see this test
			r.Status, r.Reason = NotRun, "not run by the runner (name mismatch?)"
		default:
			r.Status, r.Reason = NotRun, "interrupted: "+orDefault(pkgReason, "test binary exited")
		}
		return r
	}
	r.Status, r.Reason = NotRun, orDefault(pkgReason, "not run")
	return r
}

func parent(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	return name[:i]
}

func lastElem(name string) string { return name[strings.LastIndexByte(name, '/')+1:] }

func hasChild(run *testRun, name string) bool {
	for n := range run.tests {
		if strings.HasPrefix(n, name+"/") {
			return true
		}
	}
	return false
}

func isAncestorOfKnown(name string, known map[string]bool) bool {
	for k := range known {
		if strings.HasPrefix(k, name+"/") {
			return true
		}
	}
	return false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// pkgFailure is the one-line reason the test binary failed outside any test, or "".
func pkgFailure(run *testRun) string {
	if run.pkgAction == "pass" || run.pkgAction == "skip" {
		return ""
	}
	// A panic (a failed TestMain, or a timeout) ends the binary; test2json attributes its
	// message to the test that was running, if any.
	for _, name := range sortedKeys(run.tests) {
		for _, l := range run.tests[name].output {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "panic: ") {
				return clip(l)
			}
		}
	}
	var first string
	for _, l := range run.pkgOutput {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "panic: "):
			return clip(l)
		case l == "" || l == "FAIL" || strings.HasPrefix(l, "FAIL\t") || strings.HasPrefix(l, "ok  \t") ||
			strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "goroutine ") || strings.HasPrefix(l, "exit status"):
			continue
		}
		if first == "" {
			first = l
		}
	}
	if first == "" && run.pkgAction != "pass" && len(run.tests) == 0 {
		return "test binary failed without output"
	}
	return clip(logPrefix.ReplaceAllString(first, ""))
}

var (
	logPrefix   = regexp.MustCompile(`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d `)
	fileLine    = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: ?(.*)$`)
	assertField = regexp.MustCompile(`^\s*(Error|Messages):\s+(.*)$`)
	spaces      = regexp.MustCompile(`\s+`)
)

// reason picks the line that says why a test failed or was skipped from its output: testify's
// Messages (or Error) field when there is one, else the first file.go:N: message.
func reason(output []string) string {
	var lines []string
	for _, o := range output {
		for _, l := range strings.Split(strings.TrimRight(o, "\n"), "\n") {
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
				continue
			}
			lines = append(lines, l)
		}
	}
	var errField string
	for _, l := range lines {
		if m := assertField.FindStringSubmatch(l); m != nil {
			if m[1] == "Messages" {
				return clip(m[2])
			}
			if errField == "" {
				errField = m[2]
			}
		}
	}
	if errField != "" {
		return clip(errField)
	}
	for i, l := range lines {
		if m := fileLine.FindStringSubmatch(l); m != nil {
			if strings.TrimSpace(m[1]) != "" {
				return clip(m[1])
			}
			if i+1 < len(lines) {
				return clip(lines[i+1])
			}
		}
	}
	if len(lines) > 0 {
		return clip(lines[0])
	}
	return ""
}

// clip makes a reason one line of at most 300 runes.
func clip(s string) string {
	s = strings.TrimSpace(spaces.ReplaceAllString(s, " "))
	if r := []rune(s); len(r) > 300 {
		s = string(r[:297]) + "..."
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
