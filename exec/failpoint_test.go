package exec

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/failpoint"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
)

// failPointExecutor is an executor with test commands and one in-memory-sized store.
func failPointExecutor(tb testing.TB) *Executor {
	tb.Helper()
	return testExecutor(tb, 1, Options{TestCommands: true})
}

// fpHandle runs one command (Extended JSON, $db added) and returns the reply or the
// connection error.
func fpHandle(tb testing.TB, c wire.ConnHandler, db, cmd string) (bsoncore.Document, error) {
	tb.Helper()
	d := streamtest.ExtDoc(tb, cmd)
	body := append([]byte(nil), d[:len(d)-1]...)
	body = bsoncore.AppendStringElement(body, "$db", db)
	body = append(body, 0)
	bsoncore.UpdateLength(body, 0, int32(len(body)))
	return c.Handle(context.Background(), &wire.Request{Body: body})
}

// fpReplyCode returns the code of an {ok: 0} reply, 0 for {ok: 1}.
func fpReplyCode(reply bsoncore.Document) int32 {
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok == 1 {
		return 0
	}
	return reply.Lookup("code").Int32()
}

func TestConfigureFailPointModes(t *testing.T) {
	cases := []struct {
		name string
		mode string // the mode argument as Extended JSON
		want []int32
	}{
		{"AlwaysOn", `"alwaysOn"`, []int32{8, 8, 8}},
		{"Off", `"off"`, []int32{0, 0, 0}},
		{"Times", `{"times": 2}`, []int32{8, 8, 0}},
		{"TimesZero", `{"times": 0}`, []int32{8, 0, 0}},
		{"Skip", `{"skip": 2}`, []int32{0, 0, 8}},
		{"NeverActivated", `{"activationProbability": 0}`, []int32{0, 0, 0}},
		{"AlwaysActivated", `{"activationProbability": 1}`, []int32{8, 8, 8}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{TestCommands: true}, zap.NewNop())
			c := e.Connect(wire.ConnInfo{ID: 1})
			reply, err := fpHandle(t, c, "admin", `{"configureFailPoint": "failCommand", "mode": `+tc.mode+`,
				"data": {"failCommands": ["ping"], "errorCode": 8}}`)
			if err != nil || fpReplyCode(reply) != 0 || reply.Lookup("count").Int32() != 0 {
				t.Fatalf("configureFailPoint = %v, %v", reply, err)
			}
			for i, want := range tc.want {
				reply, err := fpHandle(t, c, "test", `{"ping": 1}`)
				if err != nil {
					t.Fatal(err)
				}
				if got := fpReplyCode(reply); got != want {
					t.Errorf("ping %d: code %d, want %d (%v)", i, got, want, reply)
				}
			}
		})
	}
}

func TestConfigureFailPointErrors(t *testing.T) {
	cases := []struct {
		name string
		cmd  string
		code int32
		msg  string
	}{
		{"UnknownName", `{"configureFailPoint": "nosuch", "mode": "off"}`, 266, "nosuch not found"},
		{"NoMode", `{"configureFailPoint": "failCommand"}`, 20, "When setting a failpoint, you must supply a 'mode'"},
		{"UnknownMode", `{"configureFailPoint": "failCommand", "mode": "on"}`, 2, "unknown mode: on"},
		{"ModeNumber", `{"configureFailPoint": "failCommand", "mode": 1}`, 14, "'mode' must be a string or JSON object"},
		{"ModeEmpty", `{"configureFailPoint": "failCommand", "mode": {}}`, 2,
			"'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'"},
		{"TimesNegative", `{"configureFailPoint": "failCommand", "mode": {"times": -1}}`, 2, "'times' option to 'mode' must be positive"},
		{"TimesTooLarge", `{"configureFailPoint": "failCommand", "mode": {"skip": 3000000000}}`, 2, "'skip' option to 'mode' is too large"},
		{"TimesString", `{"configureFailPoint": "failCommand", "mode": {"times": "1"}}`, 14,
			`Expected field "times" to have numeric type, but found string`},
		{"TimesFraction", `{"configureFailPoint": "failCommand", "mode": {"times": 1.5}}`, 2,
			`Expected field "times" to have a value exactly representable as a 64-bit integer, but found times: 1.5`},
		{"Probability", `{"configureFailPoint": "failCommand", "mode": {"activationProbability": 2}}`, 2,
			"activationProbability must be between 0.0 and 1.0; found 2"},
		{"DataNumber", `{"configureFailPoint": "failCommand", "mode": "off", "data": 1}`, 14, "the 'data' option must be a JSON object"},
	}
	e := New(Options{TestCommands: true}, zap.NewNop())
	c := e.Connect(wire.ConnInfo{ID: 1})
	for _, tc := range cases {
		reply, err := fpHandle(t, c, "admin", tc.cmd)
		if err != nil {
			t.Fatal(err)
		}
		if got := fpReplyCode(reply); got != tc.code || reply.Lookup("errmsg").StringValue() != tc.msg {
			t.Errorf("%s: %v, want code %d %q", tc.name, reply, tc.code, tc.msg)
		}
	}
	reply, _ := fpHandle(t, c, "test", `{"configureFailPoint": "failCommand", "mode": "off"}`)
	if fpReplyCode(reply) != 13 {
		t.Errorf("outside admin: %v, want Unauthorized", reply)
	}
	plain := New(Options{}, zap.NewNop()).Connect(wire.ConnInfo{ID: 1})
	if reply, _ := fpHandle(t, plain, "admin", `{"configureFailPoint": "failCommand", "mode": "off"}`); fpReplyCode(reply) != 59 {
		t.Errorf("without test commands: %v, want CommandNotFound", reply)
	}
}

func TestFailCommandMatching(t *testing.T) {
	e := New(Options{TestCommands: true}, zap.NewNop())
	admin := e.Connect(wire.ConnInfo{ID: 1})
	app := e.Connect(wire.ConnInfo{ID: 2})
	if reply, _ := fpHandle(t, app, "admin", `{"hello": 1, "client": {"application": {"name": "app1"}}}`); fpReplyCode(reply) != 0 {
		t.Fatalf("hello: %v", reply)
	}
	set := func(data string) {
		t.Helper()
		reply, err := fpHandle(t, admin, "admin", `{"configureFailPoint": "failCommand", "mode": "alwaysOn", "data": `+data+`}`)
		if err != nil || fpReplyCode(reply) != 0 {
			t.Fatalf("configureFailPoint: %v %v", reply, err)
		}
	}
	check := func(c wire.ConnHandler, cmd string, want int32) {
		t.Helper()
		reply, err := fpHandle(t, c, "admin", cmd)
		if err != nil {
			t.Fatal(err)
		}
		if got := fpReplyCode(reply); got != want {
			t.Errorf("%s: code %d, want %d (%v)", cmd, got, want, reply)
		}
	}
	// An alias fails with its command; configureFailPoint never fails.
	set(`{"failCommands": ["isMaster", "configureFailPoint"], "errorCode": 2}`)
	check(admin, `{"ismaster": 1}`, 2)
	check(admin, `{"configureFailPoint": "failCommand", "mode": "off"}`, 0)
	check(admin, `{"ismaster": 1}`, 0)
	// appName restricts the failpoint to the connections of one application.
	set(`{"failAllCommands": true, "appName": "app1", "errorCode": 2}`)
	check(admin, `{"ping": 1}`, 0)
	check(app, `{"ping": 1}`, 2)
	check(app, `{"buildInfo": 1}`, 2)
	// Without errorCode, closeConnection or blockConnection the failpoint does nothing.
	set(`{"failCommands": ["ping"]}`)
	check(admin, `{"ping": 1}`, 0)
	// closeConnection: no reply, the connection is closed.
	set(`{"failCommands": ["ping"], "closeConnection": true}`)
	if reply, err := fpHandle(t, admin, "admin", `{"ping": 1}`); !errors.Is(err, failpoint.ErrCloseConnection) || reply != nil {
		t.Errorf("closeConnection: %v, %v", reply, err)
	}
	entered := e.Fail.Entered()
	if entered != 4 { // isMaster, ping and buildInfo of app1, the closed ping
		t.Errorf("entered = %d, want 4", entered)
	}
}

func TestFailCommandLabelsAndWriteConcernError(t *testing.T) {
	e := failPointExecutor(t)
	c := e.Connect(wire.ConnInfo{ID: 1})
	set := func(data string) {
		t.Helper()
		reply, err := fpHandle(t, c, "admin", `{"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": `+data+`}`)
		if err != nil || fpReplyCode(reply) != 0 {
			t.Fatalf("configureFailPoint: %v %v", reply, err)
		}
	}
	labels := func(reply bsoncore.Document) string {
		v, err := reply.LookupErr("errorLabels")
		if err != nil {
			return ""
		}
		return v.String()
	}
	const retryable = `{"insert": "c", "documents": [{"_id": 1}], "lsid": ` + retryLSID + `, "txnNumber": {"$numberLong": "1"}}`
	// A retryable code on a retryable write gets mongod's RetryableWriteError label...
	set(`{"failCommands": ["insert"], "errorCode": 91}`)
	reply, _ := fpHandle(t, c, "db", retryable)
	if fpReplyCode(reply) != 91 || labels(reply) != `["RetryableWriteError"]` {
		t.Errorf("retryable write: %v", reply)
	}
	// ...unless errorLabels replaces the labels.
	set(`{"failCommands": ["insert"], "errorCode": 91, "errorLabels": []}`)
	if reply, _ := fpHandle(t, c, "db", retryable); fpReplyCode(reply) != 91 || labels(reply) != "" {
		t.Errorf("errorLabels []: %v", reply)
	}
	// Not a retryable write: no label.
	set(`{"failCommands": ["insert"], "errorCode": 91}`)
	if reply, _ := fpHandle(t, c, "db", `{"insert": "c", "documents": [{"_id": 1}]}`); fpReplyCode(reply) != 91 || labels(reply) != "" {
		t.Errorf("plain insert: %v", reply)
	}
	// writeConcernError: the write happens and the reply carries the error.
	set(`{"failCommands": ["insert"], "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"}}`)
	reply, _ = fpHandle(t, c, "db", retryable)
	if fpReplyCode(reply) != 0 || reply.Lookup("n").Int32() != 1 || labels(reply) != `["RetryableWriteError"]` ||
		reply.Lookup("writeConcernError", "code").Int32() != 91 {
		t.Errorf("writeConcernError: %v", reply)
	}
}
