// Command compat runs the MongoDB drivers' spec tests against cleave (or any server) and prints,
// per suite, how many tests ran, passed, failed and were skipped, with the reason for every test
// that did not pass.
//
//	go run ./cmd/compat                                  # build cleave, run every suite
//	go run ./cmd/compat -uri mongodb://127.0.0.1:27017/ -suites crud,sessions
//	go run ./cmd/compat -suites target -baseline testdata/baseline.txt   # what CI checks
//	go run ./cmd/compat -doc ../docs/compatibility.md -baseline testdata/baseline.txt -known testdata/known.txt -update   # make compat
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/cleavedb/cleave/compat"
)

// main runs the command and exits with 1 when it fails.
func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
}

// flags are the command line, parsed.
type flags struct {
	uri, bin, suites, doc, baseline, known, jsonOut string
	update, prune, oneHost, verbose, list           bool
	timeout                                         time.Duration
}

// parseFlags defines the command's flags and parses the command line into them.
func parseFlags() *flags {
	f := &flags{}
	flag.StringVar(&f.uri, "uri", "", "run against this server instead of building and starting cleave")
	flag.StringVar(&f.bin, "cleave", "", "start this cleave binary instead of building one from the repository")
	flag.StringVar(&f.suites, "suites", "all", "comma-separated suites; \"all\", \"prose\" (the prose suites), \"target\" (the CI suites: "+strings.Join(compat.TargetSuites, ", ")+")")
	flag.StringVar(&f.doc, "doc", "", "rewrite the table between "+compat.BeginMarker+" and "+compat.EndMarker+" in this file, docs/compatibility.md for make compat (\"-\": print it)")
	flag.StringVar(&f.baseline, "baseline", "", "baseline file of passing tests: fail if one of them no longer passes")
	flag.StringVar(&f.known, "known", "", "known-failures file (suite<TAB>pattern<TAB>reason): the reason the table gives for the tests it matches")
	flag.BoolVar(&f.update, "update", false, "with -baseline: add the newly passing tests to the file")
	flag.BoolVar(&f.prune, "prune", false, "with -update: also remove the tests that no longer pass (accepting regressions)")
	flag.DurationVar(&f.timeout, "timeout", 15*time.Minute, "go test -timeout for each suite")
	flag.BoolVar(&f.oneHost, "one-host", false, "name the started cleave once in the URI (tests needing two mongoses then fail)")
	flag.BoolVar(&f.verbose, "v", false, "stream the runners' output to stderr and list passing tests too")
	flag.StringVar(&f.jsonOut, "json", "", "also write every result to this file as JSON")
	flag.BoolVar(&f.list, "list", false, "list the suites and exit")
	flag.Parse()
	return f
}

// run runs the selected suites, prints their results, writes what the flags ask for (JSON,
// the compatibility page's table) and, with -baseline, fails on a regression.
func run() error {
	f := parseFlags()
	if f.list {
		return listSuites(os.Stdout)
	}
	o, knownFailures, err := f.options()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, version, err := compat.RunSuites(ctx, o)
	if err != nil {
		return err
	}
	knownFailures.Apply(results)
	if err := f.report(results, version); err != nil {
		return err
	}
	if f.baseline == "" {
		return nil
	}
	return checkBaseline(os.Stdout, f.baseline, results, f.update, f.prune)
}

// listSuites writes every suite with the package and test pattern that run it (-list).
func listSuites(w io.Writer) error {
	var b strings.Builder
	for _, s := range compat.Suites {
		what := strings.Join(s.Dirs, ", ")
		if s.IsProse() {
			what = "prose"
		}
		fmt.Fprintf(&b, "%-26s %s -run '%s' (%s)\n", s.Name, s.Pkg, s.RunPattern(), what)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// options resolves the flags into what compat.RunSuites takes, reading the known failures
// and finding the module and repository from the working directory.
func (f *flags) options() (compat.Options, compat.Known, error) {
	sel, err := compat.SelectSuites(f.suites)
	if err != nil {
		return compat.Options{}, nil, err
	}
	var knownFailures compat.Known
	if f.known != "" {
		if knownFailures, err = compat.ReadKnown(f.known); err != nil {
			return compat.Options{}, nil, err
		}
	}
	cwd, err := os.Getwd()
	if err != nil {
		return compat.Options{}, nil, err
	}
	moduleDir, repoDir, err := compat.Dirs(cwd)
	if err != nil {
		return compat.Options{}, nil, err
	}
	o := compat.Options{ModuleDir: moduleDir, RepoDir: repoDir, URI: f.uri, CleaveBin: f.bin, OneHost: f.oneHost, Suites: sel,
		Timeout: f.timeout, Progress: os.Stderr}
	if f.verbose {
		o.Log = os.Stderr
	}
	return o, knownFailures, nil
}

// report prints the results as text and writes them where -json and -doc say.
func (f *flags) report(results []compat.SuiteResult, version string) error {
	if err := compat.WriteText(os.Stdout, results, f.verbose); err != nil {
		return err
	}
	if f.jsonOut != "" {
		if err := writeJSON(f.jsonOut, results); err != nil {
			return err
		}
	}
	if f.doc == "-" {
		if _, err := os.Stdout.WriteString(compat.Markdown(results, version)); err != nil {
			return err
		}
	} else if f.doc != "" {
		if err := compat.RewriteDoc(f.doc, compat.Markdown(results, version)); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "rewrote the table in", f.doc)
	}
	return nil
}

// checkBaseline compares the results with the baseline file at path, printing new passes,
// excused failures and regressions; with update it adds the new passes to the file (and with
// prune drops the regressions). It fails on a regression unless update and prune accept it.
func checkBaseline(w io.Writer, path string, results []compat.SuiteResult, update, prune bool) error {
	b, err := compat.ReadBaseline(path)
	if err != nil {
		return err
	}
	regressions, gains, excused := b.Diff(results)
	var out strings.Builder
	for _, g := range gains {
		fmt.Fprintln(&out, "NEW PASS", g)
	}
	for _, e := range excused {
		fmt.Fprintln(&out, "KNOWN", e)
	}
	for _, r := range regressions {
		fmt.Fprintln(&out, "REGRESSION", r)
	}
	if _, err := io.WriteString(w, out.String()); err != nil {
		return err
	}
	if update {
		b.Update(results, prune)
		if err := b.Write(path); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "updated %s (%d new passes)\n", path, len(gains))
	}
	if len(regressions) > 0 && (!update || !prune) {
		return fmt.Errorf("%d baseline tests no longer pass", len(regressions))
	}
	return nil
}

// writeJSON writes the results to path as indented JSON.
func writeJSON(path string, results []compat.SuiteResult) error {
	raw, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}
