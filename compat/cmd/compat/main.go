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

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		uri      = flag.String("uri", "", "run against this server instead of building and starting cleave")
		bin      = flag.String("cleave", "", "start this cleave binary instead of building one from the repository")
		suites   = flag.String("suites", "all", "comma-separated suites; \"all\", \"prose\" (the prose suites), \"target\" (the CI suites: "+strings.Join(compat.TargetSuites, ", ")+")")
		doc      = flag.String("doc", "", "rewrite the table between "+compat.BeginMarker+" and "+compat.EndMarker+" in this file, docs/compatibility.md for make compat (\"-\": print it)")
		baseline = flag.String("baseline", "", "baseline file of passing tests: fail if one of them no longer passes")
		known    = flag.String("known", "", "known-failures file (suite<TAB>pattern<TAB>reason): the reason the table gives for the tests it matches")
		update   = flag.Bool("update", false, "with -baseline: add the newly passing tests to the file")
		prune    = flag.Bool("prune", false, "with -update: also remove the tests that no longer pass (accepting regressions)")
		timeout  = flag.Duration("timeout", 15*time.Minute, "go test -timeout for each suite")
		oneHost  = flag.Bool("one-host", false, "name the started cleave once in the URI (tests needing two mongoses then fail)")
		verbose  = flag.Bool("v", false, "stream the runners' output to stderr and list passing tests too")
		jsonOut  = flag.String("json", "", "also write every result to this file as JSON")
		list     = flag.Bool("list", false, "list the suites and exit")
	)
	flag.Parse()
	if *list {
		var b strings.Builder
		for _, s := range compat.Suites {
			what := strings.Join(s.Dirs, ", ")
			if s.IsProse() {
				what = "prose"
			}
			fmt.Fprintf(&b, "%-26s %s -run '%s' (%s)\n", s.Name, s.Pkg, s.RunPattern(), what)
		}
		_, err := os.Stdout.WriteString(b.String())
		return err
	}
	sel, err := compat.SelectSuites(*suites)
	if err != nil {
		return err
	}
	var knownFailures compat.Known
	if *known != "" {
		if knownFailures, err = compat.ReadKnown(*known); err != nil {
			return err
		}
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	moduleDir, repoDir, err := compat.Dirs(cwd)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o := compat.Options{ModuleDir: moduleDir, RepoDir: repoDir, URI: *uri, CleaveBin: *bin, OneHost: *oneHost, Suites: sel,
		Timeout: *timeout, Progress: os.Stderr}
	if *verbose {
		o.Log = os.Stderr
	}
	results, version, err := compat.RunSuites(ctx, o)
	if err != nil {
		return err
	}
	knownFailures.Apply(results)
	if err := compat.WriteText(os.Stdout, results, *verbose); err != nil {
		return err
	}
	if *jsonOut != "" {
		if err := writeJSON(*jsonOut, results); err != nil {
			return err
		}
	}
	if *doc == "-" {
		if _, err := os.Stdout.WriteString(compat.Markdown(results, version)); err != nil {
			return err
		}
	} else if *doc != "" {
		if err := compat.RewriteDoc(*doc, compat.Markdown(results, version)); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "rewrote the table in", *doc)
	}
	if *baseline == "" {
		return nil
	}
	return checkBaseline(os.Stdout, *baseline, results, *update, *prune)
}

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

func writeJSON(path string, results []compat.SuiteResult) error {
	raw, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}
