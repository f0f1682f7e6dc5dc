package compat

import (
	"context"
	"regexp"
	"strings"
)

// funcsPattern is the go test -run pattern selecting exactly the given top-level functions.
func funcsPattern(funcs []string) string {
	quoted := make([]string, len(funcs))
	for i, f := range funcs {
		quoted[i] = regexp.QuoteMeta(f)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}

// runProse runs a prose suite. A function the test binary's crash left unfinished is run
// again on its own, once.
func (r *Runner) runProse(ctx context.Context, s Suite) (SuiteResult, error) {
	run, err := r.firstRun(ctx, s)
	if err != nil {
		return SuiteResult{}, err
	}
	res := SuiteResult{Suite: s.Name, Err: pkgFailure(run)}
	rerun := unfinished(run, s.Funcs)
	for _, fn := range s.Funcs {
		if !rerun[fn] {
			res.Results = append(res.Results, proseResults(fn, run, res.Err)...)
			continue
		}
		again, err := r.goTest(ctx, s, funcsPattern([]string{fn}))
		if err != nil {
			return SuiteResult{}, err
		}
		res.Results = append(res.Results, proseResults(fn, again, pkgFailure(again))...)
	}
	return res, nil
}

// unfinished is the set of funcs a crash of the test binary left unfinished (never started,
// or started and never ended); none if it did not crash.
func unfinished(run *testRun, funcs []string) map[string]bool {
	out := map[string]bool{}
	if !crashed(run) {
		return out
	}
	for _, fn := range funcs {
		if st := run.tests[fn]; st == nil || st.action == "" {
			out[fn] = true
		}
	}
	return out
}

// proseResults are the tests of the test function fn, named as go test names them: its leaf
// subtests in the order they ran, or fn itself when it has none (it ran alone, was skipped as a
// whole, or was never reached). fn also counts as a test of its own when it failed while none
// of its subtests did (in its setup or cleanup).
func proseResults(fn string, run *testRun, pkgReason string) []Result {
	var out []Result
	childFailed := false
	for _, name := range run.order {
		if !strings.HasPrefix(name, fn+"/") || hasChild(run, name) {
			continue
		}
		r := outcome(name, name, run, pkgReason)
		childFailed = childFailed || r.Status == Fail || r.Status == NotRun
		out = append(out, r)
	}
	if st := run.tests[fn]; len(out) == 0 || !childFailed && st != nil && st.action == "fail" {
		out = append([]Result{outcome(fn, fn, run, pkgReason)}, out...)
	}
	return out
}
