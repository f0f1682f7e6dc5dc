package exec

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// adminJSON runs cmdJSON on the admin database.
func adminJSON(t *testing.T, c wire.ConnHandler, cmdJSON string) bsoncore.Document {
	t.Helper()
	return handleJSONOn(context.Background(), t, c, "admin", cmdJSON)
}

// TestKillOp: an insert blocked on key locks shows in the currentOp command (filtered on its
// command), killOp of its opid interrupts it with 11601 Interrupted, nothing is inserted, and
// its connection carries on.
func TestKillOp(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	a := e.Connect(wire.ConnInfo{ID: 1})
	b := e.Connect(wire.ConnInfo{ID: 2})
	unlock := e.Cat.Locks().LockAll() // another writer holding every key
	done := make(chan bsoncore.Document)
	go func() { done <- handleJSON(context.Background(), t, a, `{"insert": "k", "documents": [{"_id": 1}]}`) }()
	var opid int64
	for deadline := time.Now().Add(10 * time.Second); opid == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the blocked insert never showed in currentOp")
		}
		r := adminJSON(t, b, `{"currentOp": 1, "command.insert": "k"}`)
		if ops, _ := r.Lookup("inprog").ArrayOK(); ops != nil {
			if vals, _ := ops.Values(); len(vals) == 1 {
				opid = vals[0].Document().Lookup("opid").Int64()
			}
		}
	}
	if r := adminJSON(t, b, `{"currentOp": 1, "command.insert": "nothing"}`); len(r.Lookup("inprog").Array()) != 5 { // an empty array
		t.Errorf("currentOp filtered on a command that does not run: %v", r)
	}
	r := adminJSON(t, b, `{"killOp": 1, "op": `+strconv.FormatInt(opid, 10)+`}`)
	if info, _ := r.Lookup("info").StringValueOK(); info != "attempting to kill op" {
		t.Fatalf("killOp: %v", r)
	}
	var reply bsoncore.Document
	select {
	case reply = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed insert did not end")
	}
	unlock()
	if code, _ := reply.Lookup("code").AsInt32OK(); code != int32(mongoerr.Interrupted) {
		t.Fatalf("killed insert: %v, want 11601 Interrupted", reply)
	}
	if r := handleJSON(context.Background(), t, a, `{"count": "k"}`); r.Lookup("n").Int32() != 0 {
		t.Errorf("the killed insert inserted: %v", r)
	}
	if r := handleJSON(context.Background(), t, a, `{"insert": "k", "documents": [{"_id": 2}]}`); r.Lookup("n").Int32() != 1 {
		t.Errorf("the connection after killOp: %v", r)
	}
	if r := handleJSON(context.Background(), t, a, `{"dataSize": "t.k"}`); r.Lookup("numObjects").Int64() != 1 || r.Lookup("size").Int64() == 0 {
		t.Errorf("dataSize: %v", r)
	}
}
