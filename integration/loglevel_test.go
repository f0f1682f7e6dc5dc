package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestLogLevel: setParameter's logLevel (mongosh's db.setLogLevel) and logComponentVerbosity
// change the server's log verbosity at runtime: at 1 and above every command is logged (at
// debug, as MongoDB logs every operation from D1), at 0 only slow ones; getParameter reports
// the setting and "was" the one before, and bad values get MongoDB's errors.
func TestLogLevel(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.client(t)
	ctx := context.Background()
	admin := c.Database("admin")
	// logged inserts a document into a database of its own, named after marker, and reports
	// whether the log shows that insert.
	logged := func(marker string) bool {
		t.Helper()
		db := dbName(t) + "_" + marker
		if _, err := c.Database(db).Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		var logs struct {
			Log []string `bson:"log"`
		}
		if err := admin.RunCommand(ctx, bson.D{{Key: "getLog", Value: "global"}}).Decode(&logs); err != nil {
			t.Fatal(err)
		}
		for _, l := range logs.Log {
			if strings.Contains(l, `"cmd":"insert"`) && strings.Contains(l, `"db":"`+db+`"`) {
				return true
			}
		}
		return false
	}
	level := func() (int32, int32) {
		t.Helper()
		var p struct {
			Level int32 `bson:"logLevel"`
			Comp  struct {
				Verbosity int32 `bson:"verbosity"`
			} `bson:"logComponentVerbosity"`
		}
		if err := admin.RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "logLevel", Value: 1},
			{Key: "logComponentVerbosity", Value: 1}}).Decode(&p); err != nil {
			t.Fatal(err)
		}
		return p.Level, p.Comp.Verbosity
	}
	set := func(name string, v any) bson.M {
		t.Helper()
		res, err := runCmd(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: name, Value: v}})
		if err != nil {
			t.Fatalf("setParameter %s: %v", name, err)
		}
		return res
	}

	if l, v := level(); l != 0 || v != 0 {
		t.Fatalf("at start: logLevel %d, verbosity %d, want 0 and 0", l, v)
	}
	if logged("quiet0") {
		t.Fatal("at logLevel 0 a fast insert was logged")
	}
	if res := set("logLevel", 1); res["was"] != int32(0) {
		t.Fatalf("setParameter logLevel 1 answered %v, want was: 0", res)
	}
	if l, v := level(); l != 1 || v != 1 {
		t.Fatalf("after logLevel 1: logLevel %d, verbosity %d", l, v)
	}
	if !logged("verbose1") {
		t.Fatal("at logLevel 1 a fast insert was not logged")
	}
	if res := set("logComponentVerbosity", bson.D{{Key: "verbosity", Value: 0}}); res["was"] == nil {
		t.Fatalf("setParameter logComponentVerbosity answered %v, want was", res)
	}
	if logged("quiet1") {
		t.Fatal("back at verbosity 0 a fast insert was logged")
	}

	// mongosh's helpers.
	out := srv.mongosh(t, "admin", "--eval", `db.setLogLevel(2); print("components", db.getLogComponents().verbosity)`)
	if !strings.Contains(out, "components 2") {
		t.Fatalf("mongosh db.setLogLevel(2), db.getLogComponents():\n%s", out)
	}
	set("logLevel", 0)

	for _, tc := range []struct {
		name string
		v    any
		code int32
		msg  string
	}{
		{"logLevel", -1, 2, "Invalid value for logLevel: logLevel: -1"},
		{"logLevel", "high", 2, "Invalid value for logLevel"},
		{"logComponentVerbosity", 3, 2, "log component verbosity is not a BSON object"},
		{"logComponentVerbosity", bson.D{{Key: "verbosity", Value: "x"}}, 2, "Expected logComponentVerbosity.verbosity to be a number"},
		{"logComponentVerbosity", bson.D{{Key: "query", Value: bson.D{{Key: "verbosity", Value: 1}}}}, 238, "one verbosity for all components"},
	} {
		_, err := runCmd(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: tc.name, Value: tc.v}})
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code || !strings.Contains(ce.Message, tc.msg) {
			t.Errorf("setParameter %s: %v: got %v, want %d %q", tc.name, tc.v, err, tc.code, tc.msg)
		}
	}
	if l, _ := level(); l != 0 {
		t.Fatalf("refused settings changed logLevel to %d", l)
	}
}
