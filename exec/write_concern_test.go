package exec

import (
	"strconv"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
)

// TestWriteConcernUnsatisfiable checks the write concerns one copy cannot satisfy: the
// write is applied and answered ok with a writeConcernError (100 for w: 2 and up, 79 for an
// unknown tag), as a mongod of a one-member replica set answers; w: 1 and "majority" are
// satisfied, and abortTransaction waits for nothing.
func TestWriteConcernUnsatisfiable(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	wce := func(reply bsoncore.Document) int32 {
		code, _ := reply.Lookup("writeConcernError", "code").Int32OK()
		return code
	}
	cases := []struct {
		name, wc string
		want     int32
	}{
		{"W1", `{"w": 1}`, 0},
		{"Majority", `{"w": "majority", "wtimeout": 100}`, 0},
		{"W2", `{"w": 2, "j": true}`, 100},
		{"W10", `{"w": 10}`, 100},
		{"Tag", `{"w": "dc2"}`, 79},
	}
	for i, tc := range cases {
		reply := handle(t, c, withDB(streamtest.ExtDoc(t, `{"insert": "c", "documents": [{"_id": `+strconv.Itoa(i)+`}], "writeConcern": `+tc.wc+`}`), "wc"))
		if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 || reply.Lookup("n").Int32() != 1 || wce(reply) != tc.want {
			t.Errorf("%s: %v, want n: 1 and writeConcernError %d", tc.name, reply, tc.want)
		}
	}
	if got := run(t, c, withDB(streamtest.ExtDoc(t, `{"count": "c"}`), "wc")).Lookup("n").Int32(); got != int32(len(cases)) {
		t.Fatalf("documents applied: %d, want %d (a writeConcernError does not undo the write)", got, len(cases))
	}
	a := &txnSession{t: t, c: c, id: 1, txn: 1}
	a.ok(true, `{"insert": "c", "documents": [{"_id": 1}]}`)
	if reply := a.cmd(false, `{"commitTransaction": 1, "writeConcern": {"w": 10}}`); wce(reply) != 100 || len(replyLabels(reply)) != 0 {
		t.Fatalf("commit with w: 10: %v, want writeConcernError 100 without labels", reply)
	}
	a.txn = 2
	a.ok(true, `{"insert": "c", "documents": [{"_id": 2}]}`)
	if reply := a.ok(false, `{"abortTransaction": 1, "writeConcern": {"w": 10}}`); wce(reply) != 0 {
		t.Fatalf("abort with w: 10: %v, want no writeConcernError", reply)
	}
	if got := batchIDs(plain(t, c, `{"find": "c"}`)); len(got) != 1 || got[0] != 1 {
		t.Fatalf("txn.c after the commit and the abort: %v, want [1]", got)
	}
}
