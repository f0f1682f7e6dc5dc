package exec

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"github.com/google/uuid"
)

// Two session ids in Extended JSON, for commands sent in a session.
const (
	lsidA = `{"id": {"$binary": {"base64": "AAAAAAAAQACAAAAAAAAAAQ==", "subType": "04"}}}`
	lsidB = `{"id": {"$binary": {"base64": "AAAAAAAAQACAAAAAAAAAAg==", "subType": "04"}}}`
)

// wantError fails unless reply is {ok: 0} with code and an errmsg containing msg.
func wantError(t *testing.T, what string, reply bsoncore.Document, code mongoerr.Code, msg string) {
	t.Helper()
	got, _ := reply.Lookup("code").Int32OK()
	errmsg, _ := reply.Lookup("errmsg").StringValueOK()
	if mongoerr.Code(got) != code || !strings.Contains(errmsg, msg) {
		t.Errorf("%s: %v, want code %d (%s) with message %q", what, reply, code, code, msg)
	}
}

// openCursor inserts three documents into t.c and opens a find cursor of batch size 1 with
// the extra fields given (a JSON fragment, "" for none); it returns the cursor id.
func openCursor(t *testing.T, c wire.ConnHandler, extra string) int64 {
	t.Helper()
	bg := context.Background()
	handleJSON(bg, t, c, `{"insert": "c", "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3}]}`)
	if extra != "" {
		extra = ", " + extra
	}
	reply := handleJSON(bg, t, c, `{"find": "c", "batchSize": 1`+extra+`}`)
	id, ok := reply.Lookup("cursor", "id").Int64OK()
	if !ok || id == 0 {
		t.Fatalf("find: %v", reply)
	}
	return id
}

// getMore returns a getMore command on cursor id of t.c, with extra fields ("" for none).
func getMore(id int64, extra string) string {
	if extra != "" {
		extra = ", " + extra
	}
	return fmt.Sprintf(`{"getMore": {"$numberLong": "%d"}, "collection": "c", "batchSize": 1%s}`, id, extra)
}

// TestGetMoreSessionMismatch checks mongos' rule (validateLSID in cluster_find.cpp): a
// cursor continues only in the session it was opened in, and a refused getMore leaves it
// open.
func TestGetMoreSessionMismatch(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	bg := context.Background()
	id := openCursor(t, c, `"lsid": `+lsidA)
	wantError(t, "other session", handleJSON(bg, t, c, getMore(id, `"lsid": `+lsidB)), mongoerr.Location50801,
		fmt.Sprintf("Cannot run getMore on cursor %d, which was created in session 00000000-0000-4000-8000-000000000001 - 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU= -  - , in session 00000000-0000-4000-8000-000000000002 - ", id))
	wantError(t, "no session", handleJSON(bg, t, c, getMore(id, "")), mongoerr.Location50800,
		fmt.Sprintf("Cannot run getMore on cursor %d, which was created in session 00000000-0000-4000-8000-000000000001 - ", id))
	if reply := handleJSON(bg, t, c, getMore(id, `"lsid": `+lsidA)); reply.Lookup("ok").Double() != 1 {
		t.Errorf("same session: %v", reply)
	}

	id = openCursor(t, e.Connect(wire.ConnInfo{ID: 2}), "")
	wantError(t, "session for a sessionless cursor", handleJSON(bg, t, c, getMore(id, `"lsid": `+lsidB)), mongoerr.Location50799,
		fmt.Sprintf("Cannot run getMore on cursor %d, which was not created in a session, in session 00000000-0000-4000-8000-000000000002 - ", id))
}

// TestGetMoreMaxTimeMS checks mongos' rules for time limits on getMore: maxTimeMS on a
// cursor that is not tailable and awaitData is BadValue (wrongly typed, TypeMismatch), and
// a getMore runs under what the opening command's maxTimeMS left.
func TestGetMoreMaxTimeMS(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	bg := context.Background()
	id := openCursor(t, c, `"maxTimeMS": 100000`)
	wantError(t, "string", handleJSON(bg, t, c, getMore(id, `"maxTimeMS": "x"`)), mongoerr.TypeMismatch,
		"BSON field 'getMore.maxTimeMS' is the wrong type 'string', expected types '[long, int, decimal, double']")
	wantError(t, "non-tailable", handleJSON(bg, t, c, getMore(id, `"maxTimeMS": 10`)), mongoerr.BadValue,
		"maxTimeMS can only be used with getMore for tailable, awaitData cursors")

	id = openCursor(t, c, `"maxTimeMS": 100000`)
	cur, err := e.Cursors.Acquire(id)
	if err != nil {
		t.Fatal(err)
	}
	if cur.TimeLeft <= 0 || cur.TimeLeft > 100*time.Second {
		t.Errorf("time left after the first batch: %v", cur.TimeLeft)
	}
	cur.TimeLeft = time.Nanosecond // as if the first batch had spent the whole budget
	e.Cursors.Done(cur, false)
	wantError(t, "budget spent", handleJSON(bg, t, c, getMore(id, "")), mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
	wantError(t, "after MaxTimeMSExpired", handleJSON(bg, t, c, getMore(id, "")), mongoerr.CursorNotFound, "")
}

// TestGetMoreAfterDrop checks that a cursor over a collection dropped or renamed since it
// opened fails as mongod's plan executor does on restore (QueryPlanKilled), and is closed.
func TestGetMoreAfterDrop(t *testing.T) {
	e := testExecutor(t, 2, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	bg := context.Background()
	id := openCursor(t, c, "")
	collUUID := uuid.UUID(e.Cat.Store().State().Collection("t", "c").UUID).String()
	handleJSON(bg, t, c, `{"drop": "c"}`)
	wantError(t, "dropped", handleJSON(bg, t, c, getMore(id, "")), mongoerr.QueryPlanKilled, "collection dropped. UUID "+collUUID)
	wantError(t, "after QueryPlanKilled", handleJSON(bg, t, c, getMore(id, "")), mongoerr.CursorNotFound, "")

	id = openCursor(t, c, "")
	run(t, c, bsoncore.NewDocumentBuilder().AppendString("renameCollection", "t.c").AppendString("to", "t.d").AppendString("$db", "admin").Build())
	wantError(t, "renamed", handleJSON(bg, t, c, getMore(id, "")), mongoerr.QueryPlanKilled, "collection renamed from 't.c' to 't.d'. UUID ")

	reply := handleJSON(bg, t, c, `{"aggregate": "d", "pipeline": [], "cursor": {"batchSize": 1}}`)
	id = reply.Lookup("cursor", "id").Int64()
	handleJSON(bg, t, c, `{"drop": "d"}`)
	wantError(t, "aggregate, dropped", handleJSON(bg, t, c, strings.Replace(getMore(id, ""), `"c"`, `"d"`, 1)), mongoerr.QueryPlanKilled, "collection dropped. UUID ")
}

// TestListCommandsCursorBatchSize checks that listCollections and listIndexes honour
// cursor.batchSize: the first batch holds that many entries and getMore the rest, as
// mongod's listing cursors do; without it everything comes in the first batch.
func TestListCommandsCursorBatchSize(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	bg := context.Background()
	for _, coll := range []string{"a", "b", "c"} {
		handleJSON(bg, t, c, `{"insert": "`+coll+`", "documents": [{"x": 1}]}`)
	}
	handleJSON(bg, t, c, `{"createIndexes": "c", "indexes": [{"key": {"x": 1}, "name": "x_1"}, {"key": {"y": 1}, "name": "y_1"}]}`)
	for _, tc := range []struct{ list, coll string }{
		{`{"listCollections": 1, "cursor": {"batchSize": 2}}`, "$cmd.listCollections"},
		{`{"listIndexes": "c", "cursor": {"batchSize": 2}}`, "c"},
	} {
		reply := handleJSON(bg, t, c, tc.list)
		first, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
		id := reply.Lookup("cursor", "id").Int64()
		if len(first) != 2 || id == 0 {
			t.Fatalf("%s: %v", tc.list, reply)
		}
		more := handleJSON(bg, t, c, fmt.Sprintf(`{"getMore": {"$numberLong": "%d"}, "collection": "%s"}`, id, tc.coll))
		next, _ := more.Lookup("cursor", "nextBatch").Array().Values()
		if len(next) != 1 || more.Lookup("cursor", "id").Int64() != 0 {
			t.Errorf("%s, getMore: %v", tc.list, more)
		}
	}
	reply := handleJSON(bg, t, c, `{"listIndexes": "c"}`)
	if all, _ := reply.Lookup("cursor", "firstBatch").Array().Values(); len(all) != 3 || reply.Lookup("cursor", "id").Int64() != 0 {
		t.Errorf("listIndexes without batchSize: %v", reply)
	}
	wantError(t, "unknown cursor field", handleJSON(bg, t, c, `{"listCollections": 1, "cursor": {"x": 1}}`), mongoerr.Location40415,
		"BSON field 'listCollections.cursor.x' is an unknown field.")
}

// TestGetMoreAuthOffAnyConnection checks that without access control a cursor opened
// outside a session is continued from any connection: there are no users to compare.
func TestGetMoreAuthOffAnyConnection(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	id := openCursor(t, e.Connect(wire.ConnInfo{ID: 1}), "")
	reply := handleJSON(context.Background(), t, e.Connect(wire.ConnInfo{ID: 2}), getMore(id, ""))
	if reply.Lookup("ok").Double() != 1 {
		t.Fatalf("getMore from another connection: %v", reply)
	}
}
