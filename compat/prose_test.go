package compat

import (
	"reflect"
	"strings"
	"testing"
)

var proseCases = []struct {
	name    string
	funcs   []string
	stream  string
	want    []Result
	wantErr string
}{
	{
		name:  "LeavesInRunOrder",
		funcs: []string{"TestB", "TestA"},
		stream: ev("run", "TestB", "") + ev("run", "TestB/z", "") + ev("pass", "TestB/z", "") +
			ev("run", "TestB/a", "") + ev("run", "TestB/a/deep", "") +
			ev("output", "TestB/a/deep", "    x_test.go:9: boom\n") + ev("fail", "TestB/a/deep", "") +
			ev("fail", "TestB/a", "") + ev("fail", "TestB", "") +
			ev("run", "TestA", "") + ev("pass", "TestA", "") + ev("fail", "", ""),
		want: []Result{{"TestB/z", Pass, ""}, {"TestB/a/deep", Fail, "boom"}, {"TestA", Pass, ""}},
	},
	{
		name:  "WholeFunctionSkipped",
		funcs: []string{"TestC"},
		stream: ev("run", "TestC", "") +
			ev("output", "TestC", "    mongotest.go:147: skipping due to environmental constraints: topology\n") +
			ev("skip", "TestC", "") + ev("pass", "", ""),
		want: []Result{{"TestC", Skip, "skipping due to environmental constraints: topology"}},
	},
	{
		// The function failed in its cleanup although its subtests passed: it counts too.
		name:  "FunctionFailedOutsideSubtests",
		funcs: []string{"TestD"},
		stream: ev("run", "TestD", "") + ev("run", "TestD/x", "") + ev("pass", "TestD/x", "") +
			ev("output", "TestD", "    d_test.go:3: cleanup failed\n") + ev("fail", "TestD", "") + ev("fail", "", ""),
		want: []Result{{"TestD", Fail, "cleanup failed"}, {"TestD/x", Pass, ""}},
	},
	{
		name:    "NeverReached",
		funcs:   []string{"TestE"},
		stream:  ev("output", "", "panic: could not detect topology kind\n") + ev("fail", "", ""),
		want:    []Result{{"TestE", NotRun, "panic: could not detect topology kind"}},
		wantErr: "panic: could not detect topology kind",
	},
}

func TestProseResults(t *testing.T) {
	for _, tc := range proseCases {
		t.Run(tc.name, func(t *testing.T) {
			run, err := parseEvents(strings.NewReader(tc.stream), nil)
			if err != nil {
				t.Fatal(err)
			}
			why := pkgFailure(run)
			var got []Result
			for _, fn := range tc.funcs {
				got = append(got, proseResults(fn, run, why)...)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("results:\n got %q\nwant %q", got, tc.want)
			}
			if why != tc.wantErr {
				t.Errorf("package failure %q, want %q", why, tc.wantErr)
			}
		})
	}
}

func TestProseSuites(t *testing.T) {
	s, ok := suiteByName("crud-prose")
	if !ok || !s.IsProse() {
		t.Fatal("no prose suite crud-prose")
	}
	const want = `^(TestWriteErrorsWithLabels|TestWriteErrorsDetails|TestHintErrors|TestWriteConcernError|TestErrorsCodeNamePropagated)$`
	if got := s.RunPattern(); got != want {
		t.Errorf("RunPattern() = %s, want %s", got, want)
	}
	sel, err := SelectSuites("prose")
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]string{}
	for _, s := range sel {
		if !s.IsProse() || s.Test != "" || len(s.Dirs) > 0 {
			t.Errorf("prose selected %s, which is not a prose suite", s.Name)
		}
		for _, f := range s.Funcs {
			if other, dup := funcs[f]; dup {
				t.Errorf("%s is in both %s and %s", f, other, s.Name)
			}
			funcs[f] = s.Name
		}
	}
	if funcs["TestHandshakeProse"] == "" || funcs["TestSessionsProse"] == "" {
		t.Errorf("prose suites miss a function: %v", funcs)
	}
}

func TestUnfinished(t *testing.T) {
	funcs := []string{"TestA", "TestB", "TestC"}
	crash := ev("run", "TestA", "") + ev("pass", "TestA", "") + ev("run", "TestB", "") + ev("run", "TestB/x", "") +
		ev("output", "TestB/x", "panic: runtime error: index out of range [0] with length 0\n") + ev("fail", "", "")
	run, err := parseEvents(strings.NewReader(crash), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := unfinished(run, funcs), map[string]bool{"TestB": true, "TestC": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("after a crash: %v, want %v", got, want)
	}
	// Failures without a crash are results, not reasons to run again.
	fail := ev("run", "TestA", "") + ev("fail", "TestA", "") + ev("fail", "", "")
	if run, err = parseEvents(strings.NewReader(fail), nil); err != nil {
		t.Fatal(err)
	}
	if got := unfinished(run, funcs); len(got) > 0 {
		t.Errorf("without a crash: %v", got)
	}
}
