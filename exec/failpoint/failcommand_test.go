package failpoint_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/failpoint"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// val parses one value in Extended JSON ("" is the absent value).
func val(t testing.TB, s string) bsoncore.Value {
	t.Helper()
	if s == "" {
		return bsoncore.Value{}
	}
	return streamtest.ExtDoc(t, `{"v": `+s+`}`).Lookup("v")
}

// configure sets fp's mode and data (Extended JSON), failing the test on an error.
func configure(t testing.TB, fp *failpoint.FailCommand, mode, data string) {
	t.Helper()
	if _, err := fp.Configure(val(t, mode), val(t, data)); err != nil {
		t.Fatalf("Configure(%s, %s): %v", mode, data, err)
	}
}

// opsTable is a command table of the commands the tests run, as dispatch matches them: a
// spelling names an Op when it is the same entry.
var opsTable = func() *command.Table {
	t := command.NewTable()
	for _, c := range []*command.Command{
		{Name: "insert"}, {Name: "find"}, {Name: "ping"}, {Name: "configureFailPoint"},
		{Name: "findAndModify", Aliases: []string{"findandmodify"}},
	} {
		t.Add(c)
	}
	return t
}()

// op is command name (as spelled) on namespace ns from application app.
func op(name, app, ns string) *failpoint.Op {
	c := opsTable.Get(name)
	return &failpoint.Op{Name: name, AppName: app, Namespace: ns,
		Names: func(s string) bool { return c != nil && opsTable.Get(s) == c }}
}

// eval runs fp before op and returns its error.
func eval(fp *failpoint.FailCommand, o *failpoint.Op) error {
	_, err := fp.Eval(context.Background(), o, zap.NewNop())
	return err
}

// code returns the MongoDB code of err, 0 for none.
func code(err error) int32 {
	if me := mongoerr.As(err); me != nil {
		return int32(me.Code)
	}
	return 0
}

// TestConfigureModes checks how often each mode fires over four matching commands, that
// Armed follows it, and that Configure returns the times the failpoint fired before.
func TestConfigureModes(t *testing.T) {
	const data = `{"failCommands": ["ping"], "errorCode": 8}`
	for _, tc := range []struct {
		name, mode string
		fires      []bool
		armedAfter bool
	}{
		{"AlwaysOn", `"alwaysOn"`, []bool{true, true, true, true}, true},
		{"Off", `"off"`, []bool{false, false, false, false}, false},
		{"TimesTwo", `{"times": 2}`, []bool{true, true, false, false}, false},
		{"TimesZeroFiresOnce", `{"times": 0}`, []bool{true, false, false, false}, false},
		{"SkipTwo", `{"skip": 2}`, []bool{false, false, true, true}, true},
		{"TimesAsDouble", `{"times": 1.0}`, []bool{true, false, false, false}, false},
		{"ProbabilityZero", `{"activationProbability": 0}`, []bool{false, false, false, false}, true},
		{"ProbabilityOne", `{"activationProbability": 1}`, []bool{true, true, true, true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fp failpoint.FailCommand
			configure(t, &fp, tc.mode, data)
			var got []bool
			for range tc.fires {
				got = append(got, code(eval(&fp, op("ping", "", "admin"))) == 8)
			}
			if !slices.Equal(got, tc.fires) {
				t.Fatalf("fired %v, want %v", got, tc.fires)
			}
			if fp.Armed() != tc.armedAfter {
				t.Fatalf("Armed() = %v after the commands", fp.Armed())
			}
			n := int64(0)
			for _, f := range tc.fires {
				if f {
					n++
				}
			}
			if fp.Entered() != n {
				t.Fatalf("Entered() = %d, want %d", fp.Entered(), n)
			}
			if count, err := fp.Configure(val(t, `"off"`), bsoncore.Value{}); err != nil || count != n || fp.Armed() {
				t.Fatalf("turning it off: count %d, %v, armed %v", count, err, fp.Armed())
			}
		})
	}
}

// TestConfigureErrors checks each malformed mode and data: MongoDB's code and message, and
// the failpoint left as it was.
func TestConfigureErrors(t *testing.T) {
	const exact = `Expected field "times" to have a value exactly representable as a 64-bit integer, but found times: 1.5`
	for _, tc := range []struct {
		name, mode, data string
		code             mongoerr.Code
		msg              string
	}{
		{"NoMode", ``, ``, mongoerr.IllegalOperation, "When setting a failpoint, you must supply a 'mode'"},
		{"UnknownMode", `"sometimes"`, ``, mongoerr.BadValue, "unknown mode: sometimes"},
		{"ModeNumber", `1`, ``, mongoerr.TypeMismatch, "'mode' must be a string or JSON object"},
		{"ModeArray", `["alwaysOn"]`, ``, mongoerr.TypeMismatch, "'mode' must be a string or JSON object"},
		{"EmptyModeDocument", `{}`, ``, mongoerr.BadValue,
			"'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'"},
		{"NegativeTimes", `{"times": -1}`, ``, mongoerr.BadValue, "'times' option to 'mode' must be positive"},
		{"NegativeSkip", `{"skip": -2}`, ``, mongoerr.BadValue, "'skip' option to 'mode' must be positive"},
		{"TimesTooLarge", `{"times": {"$numberLong": "2147483648"}}`, ``, mongoerr.BadValue, "'times' option to 'mode' is too large"},
		{"TimesString", `{"times": "2"}`, ``, mongoerr.TypeMismatch, `Expected field "times" to have numeric type, but found string`},
		{"TimesFraction", `{"times": 1.5}`, ``, mongoerr.BadValue, exact},
		{"ProbabilityString", `{"activationProbability": "1"}`, ``, mongoerr.TypeMismatch,
			"the 'activationProbability' option to 'mode' must be a double between 0 and 1"},
		{"ProbabilityAboveOne", `{"activationProbability": 1.5}`, ``, mongoerr.BadValue,
			"activationProbability must be between 0.0 and 1.0; found 1.5"},
		{"ProbabilityNegative", `{"activationProbability": -0.1}`, ``, mongoerr.BadValue,
			"activationProbability must be between 0.0 and 1.0; found -0.1"},
		{"DataString", `"alwaysOn"`, `"x"`, mongoerr.TypeMismatch, "the 'data' option must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fp failpoint.FailCommand
			configure(t, &fp, `"alwaysOn"`, `{"failCommands": ["ping"], "errorCode": 8}`)
			_, err := fp.Configure(val(t, tc.mode), val(t, tc.data))
			me := mongoerr.As(err)
			if me == nil || me.Code != tc.code || me.Message != tc.msg {
				t.Fatalf("Configure = %v, want %s %q", err, tc.code, tc.msg)
			}
			if code(eval(&fp, op("ping", "", "admin"))) != 8 {
				t.Fatal("a refused Configure changed the failpoint")
			}
		})
	}
	for _, tc := range []struct {
		mode string
		on   bool
	}{{`"off"`, false}, {`"alwaysOn"`, true}, {`{"times": 0}`, true}, {`{"skip": 3}`, true}} {
		if on, err := failpoint.ModeOn(val(t, tc.mode)); on != tc.on || err != nil {
			t.Errorf("ModeOn(%s) = %v, %v", tc.mode, on, err)
		}
	}
	if _, err := failpoint.ModeOn(val(t, `"never"`)); code(err) != int32(mongoerr.BadValue) {
		t.Errorf("ModeOn of an unknown mode: %v", err)
	}
}

// TestEvalMatches checks which commands the failpoint applies to: by command, through the
// alias function, application name and namespace, every command with failAllCommands, and
// never configureFailPoint; a command it does not apply to neither fails nor counts.
func TestEvalMatches(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		op         *failpoint.Op
		fires      bool
	}{
		{"ByName", `{"failCommands": ["insert"]}`, op("insert", "", "db.c"), true},
		{"OtherCommand", `{"failCommands": ["insert"]}`, op("find", "", "db.c"), false},
		{"AliasSpelledInData", `{"failCommands": ["findandmodify"]}`, op("findAndModify", "", "db.c"), true},
		{"AliasSpelledByClient", `{"failCommands": ["findAndModify"]}`, op("findandmodify", "", "db.c"), true},
		{"UnknownInData", `{"failCommands": ["nosuch", "insert"]}`, op("insert", "", "db.c"), true},
		{"NonStringsIgnored", `{"failCommands": [1, {"a": "insert"}]}`, op("insert", "", "db.c"), false},
		{"AppName", `{"failCommands": ["insert"], "appName": "app"}`, op("insert", "app", "db.c"), true},
		{"OtherAppName", `{"failCommands": ["insert"], "appName": "app"}`, op("insert", "other", "db.c"), false},
		{"NoAppName", `{"failCommands": ["insert"], "appName": "app"}`, op("insert", "", "db.c"), false},
		{"Namespace", `{"failCommands": ["insert"], "namespace": "db.c"}`, op("insert", "", "db.c"), true},
		{"OtherNamespace", `{"failCommands": ["insert"], "namespace": "db.c"}`, op("insert", "", "db.d"), false},
		{"DatabaseNamespace", `{"failCommands": ["ping"], "namespace": "admin"}`, op("ping", "", "admin"), true},
		{"FailAll", `{"failAllCommands": true}`, op("find", "", "db.c"), true},
		{"FailAllAnyValue", `{"failAllCommands": 0}`, op("ping", "", "admin"), true},
		{"FailAllWithAppName", `{"failAllCommands": true, "appName": "app"}`, op("find", "x", "db.c"), false},
		{"NeverConfigureFailPoint", `{"failAllCommands": true}`, op("configureFailPoint", "", "admin"), false},
		{"NeverConfigureFailPointByName", `{"failCommands": ["configureFailPoint"]}`, op("configureFailPoint", "", "admin"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fp failpoint.FailCommand
			configure(t, &fp, `"alwaysOn"`, tc.data[:len(tc.data)-1]+`, "errorCode": 11600}`)
			err := eval(&fp, tc.op)
			if fired := code(err) == 11600; fired != tc.fires {
				t.Fatalf("Eval = %v, want fired %v", err, tc.fires)
			}
			if want := map[bool]int64{true: 1}[tc.fires]; fp.Entered() != want {
				t.Fatalf("Entered() = %d, want %d", fp.Entered(), want)
			}
		})
	}
}

// TestEvalActions checks what a fired failpoint does: close the connection, fail with the
// code and failCommand's message, carry its error labels, succeed with errorCode 0, and
// nothing at all (uncounted) when the data asks for no action.
func TestEvalActions(t *testing.T) {
	var fp failpoint.FailCommand
	configure(t, &fp, `"alwaysOn"`, `{"failCommands": ["insert"], "closeConnection": true, "errorCode": 2}`)
	if err := eval(&fp, op("insert", "", "db.c")); !errors.Is(err, failpoint.ErrCloseConnection) {
		t.Fatalf("closeConnection: %v", err)
	}
	configure(t, &fp, `"alwaysOn"`, `{"failCommands": ["insert"], "errorCode": 91, "errorLabels": ["RetryableWriteError", 3]}`)
	act, err := fp.Eval(context.Background(), op("insert", "", "db.c"), zap.NewNop())
	me := mongoerr.As(err)
	if me == nil || me.Code != mongoerr.ShutdownInProgress || me.Message != "Failing command via 'failCommand' failpoint" {
		t.Fatalf("errorCode 91: %v", err)
	}
	if !act.HasLabels || !slices.Equal(act.Labels, []string{"RetryableWriteError"}) {
		t.Fatalf("labels: %+v", act)
	}
	configure(t, &fp, `"alwaysOn"`, `{"failCommands": ["insert"], "errorCode": 0, "errorLabels": []}`)
	before := fp.Entered()
	act, err = fp.Eval(context.Background(), op("insert", "", "db.c"), zap.NewNop())
	if err != nil || !act.HasLabels || len(act.Labels) != 0 || fp.Entered() != before+1 {
		t.Fatalf("errorCode 0: %v, %+v, entered %d", err, act, fp.Entered()-before)
	}
	configure(t, &fp, `"alwaysOn"`, `{"failCommands": ["insert"], "errorCode": "91", "errorLabels": ["X"]}`)
	act, err = fp.Eval(context.Background(), op("insert", "", "db.c"), zap.NewNop())
	if err != nil || act.HasLabels || fp.Entered() != before+1 {
		t.Fatalf("no action (errorCode of the wrong type): %v, %+v, entered %d", err, act, fp.Entered()-before)
	}
}

// TestEvalBlocks checks blockConnection: the command waits blockTimeMS before its error,
// gives up when its context ends, and a missing or negative blockTimeMS fails it.
func TestEvalBlocks(t *testing.T) {
	var fp failpoint.FailCommand
	configure(t, &fp, `"alwaysOn"`, `{"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 30, "errorCode": 50}`)
	start := time.Now()
	err := eval(&fp, op("find", "", "db.c"))
	if el := time.Since(start); el < 30*time.Millisecond || code(err) != 50 {
		t.Fatalf("blocked %v, then %v", el, err)
	}
	configure(t, &fp, `"alwaysOn"`, `{"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 60000}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := fp.Eval(ctx, op("find", "", "db.c"), zap.NewNop())
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("returned before the cancel: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("after the cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled command stayed blocked")
	}
	for _, tc := range []struct{ name, data, msg string }{
		{"NoBlockTime", `{"failCommands": ["find"], "blockConnection": true}`, "must specify 'blockTimeMS' when 'blockConnection' is true"},
		{"BlockTimeString", `{"failCommands": ["find"], "blockConnection": true, "blockTimeMS": "5"}`,
			"must specify 'blockTimeMS' when 'blockConnection' is true"},
		{"NegativeBlockTime", `{"failCommands": ["find"], "blockConnection": true, "blockTimeMS": -1}`, "'blockTimeMS' must be non-negative"},
	} {
		configure(t, &fp, `"alwaysOn"`, tc.data)
		me := mongoerr.As(eval(&fp, op("find", "", "db.c")))
		if me == nil || me.Code != mongoerr.InvalidOptions || me.Message != tc.msg {
			t.Errorf("%s: %v", tc.name, me)
		}
	}
}

// TestWriteConcernError checks the second evaluation after a write: a writeConcernError only
// when the data has one (and the command matches), with its labels, counted and consuming
// the mode's times, while Eval before the write leaves it alone.
func TestWriteConcernError(t *testing.T) {
	var fp failpoint.FailCommand
	configure(t, &fp, `"alwaysOn"`, `{"failCommands": ["insert"], "errorCode": 91}`)
	if wce, _ := fp.WriteConcernError(op("insert", "", "db.c")); wce != nil {
		t.Fatalf("writeConcernError without one in the data: %v", wce)
	}
	data := `{"failCommands": ["insert"], "writeConcernError": {"code": 100, "errmsg": "w"}, "errorLabels": ["L"]}`
	configure(t, &fp, `{"times": 1}`, data)
	if err := eval(&fp, op("insert", "", "db.c")); err != nil || fp.Entered() != 0 {
		t.Fatalf("Eval before the write: %v, entered %d", err, fp.Entered())
	}
	if wce, _ := fp.WriteConcernError(op("find", "", "db.c")); wce != nil {
		t.Fatalf("writeConcernError for another command: %v", wce)
	}
	wce, act := fp.WriteConcernError(op("insert", "", "db.c"))
	if c, _ := wce.Lookup("code").AsInt64OK(); c != 100 || !slices.Equal(act.Labels, []string{"L"}) || fp.Entered() != 1 {
		t.Fatalf("writeConcernError %v, %+v, entered %d", wce, act, fp.Entered())
	}
	if wce, _ := fp.WriteConcernError(op("insert", "", "db.c")); wce != nil || fp.Armed() {
		t.Fatalf("after its one time: %v, armed %v", wce, fp.Armed())
	}
}

// TestConfigureCopiesData checks that the failpoint keeps its own copy of the data: the
// buffer it came in, which a connection reuses, may change afterwards.
func TestConfigureCopiesData(t *testing.T) {
	var fp failpoint.FailCommand
	body := streamtest.ExtDoc(t, `{"configureFailPoint": "failCommand", "mode": "alwaysOn",
		"data": {"failCommands": ["insert"], "errorCode": 91, "writeConcernError": {"code": 64}}}`)
	if _, err := fp.Configure(body.Lookup("mode"), body.Lookup("data")); err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'x'
	}
	if code(eval(&fp, op("insert", "", "db.c"))) != 91 {
		t.Fatal("the failpoint read the reused buffer")
	}
	if wce, _ := fp.WriteConcernError(op("insert", "", "db.c")); wce.Lookup("code").Int32() != 64 {
		t.Fatalf("writeConcernError read the reused buffer: %v", wce)
	}
}

// TestActivationProbability checks that {activationProbability: 0.5} fires about half of
// the time, and counts exactly the times it fired.
func TestActivationProbability(t *testing.T) {
	var fp failpoint.FailCommand
	configure(t, &fp, `{"activationProbability": 0.5}`, `{"failCommands": ["ping"], "errorCode": 8}`)
	fired := int64(0)
	for range 2000 {
		if code(eval(&fp, op("ping", "", "admin"))) == 8 {
			fired++
		}
	}
	if fired < 800 || fired > 1200 || fp.Entered() != fired {
		t.Fatalf("fired %d of 2000 (entered %d)", fired, fp.Entered())
	}
}
