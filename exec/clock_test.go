package exec

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/wire"
)

// opTime returns a reply's operationTime as one number, failing when it or $clusterTime is
// missing or the two differ.
func opTime(t *testing.T, reply bsoncore.Document) uint64 {
	t.Helper()
	ts, ti, ok := reply.Lookup("operationTime").TimestampOK()
	cs, ci, ok2 := reply.Lookup("$clusterTime", "clusterTime").TimestampOK()
	if !ok || !ok2 || ts != cs || ti != ci {
		t.Fatalf("reply without matching operationTime and $clusterTime: %s", reply)
	}
	if _, h, ok := reply.Lookup("$clusterTime", "signature", "hash").BinaryOK(); !ok || len(h) != 20 {
		t.Fatalf("$clusterTime without a 20-byte signature.hash: %s", reply)
	}
	return uint64(ts)<<32 | uint64(ti)
}

// TestSessionClusterTime checks causal consistency's fields: writes advance operationTime,
// reads answer the latest, errors carry it too, and afterClusterTime is accepted (a
// Timestamp only) and moves the clock forward.
func TestSessionClusterTime(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	cmd := func(json string) bsoncore.Document { return handle(t, c, withDB(streamtest.ExtDoc(t, json), "ct")) }
	w1 := opTime(t, cmd(`{"insert": "c", "documents": [{"_id": 1}]}`))
	w2 := opTime(t, cmd(`{"insert": "c", "documents": [{"_id": 2}]}`))
	if w2 <= w1 {
		t.Fatalf("second write's operationTime %x not after the first's %x", w2, w1)
	}
	if r := opTime(t, cmd(`{"find": "c"}`)); r != w2 {
		t.Fatalf("read's operationTime %x, want the latest write's %x", r, w2)
	}
	if r := opTime(t, cmd(`{"find": 1}`)); r != w2 {
		t.Fatalf("error reply's operationTime %x, want %x", r, w2)
	}
	future := (w2>>32 + 100) << 32
	after := `"readConcern": {"afterClusterTime": {"$timestamp": {"t": ` + strconv.FormatUint(future>>32, 10) + `, "i": 0}}}`
	reply := cmd(`{"find": "c", ` + after + `}`)
	if replyCode(reply) != 72 || !strings.Contains(reply.Lookup("errmsg").StringValue(), "value must not be greater than the current clusterTime") {
		t.Fatalf("find with afterClusterTime ahead of the cluster time: %s, want 72 InvalidOptions", reply)
	}
	// A client that gossips a cluster time (another router's) moves the clock to it first.
	reply = cmd(`{"find": "c", ` + after + `, "$clusterTime": {"clusterTime": {"$timestamp": {"t": ` +
		strconv.FormatUint(future>>32, 10) + `, "i": 0}}, "signature": {"hash": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", "subType": "00"}}, "keyId": 0}}}`)
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 || opTime(t, reply) < future {
		t.Fatalf("find with afterClusterTime gossiped by $clusterTime: %s", reply)
	}
	if got := replyCode(cmd(`{"find": "c", "readConcern": {"afterClusterTime": 5}}`)); got != 14 {
		t.Fatalf("afterClusterTime not a Timestamp: code %d, want 14 TypeMismatch", got)
	}
}

// TestSessionKillClosesCursors checks that killSessions closes the cursors opened in the
// killed session, that refreshSessions keeps a session alive, and that an expired session's
// cursors are reaped even with noCursorTimeout.
func TestSessionKillClosesCursors(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	cmd := func(json string) bsoncore.Document { return handle(t, c, withDB(streamtest.ExtDoc(t, json), "ks")) }
	cmd(`{"insert": "c", "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3}]}`)
	open := func() int64 {
		reply := cmd(`{"find": "c", "batchSize": 1, "noCursorTimeout": true, "lsid": ` + retryLSID + `}`)
		id, ok := reply.Lookup("cursor", "id").Int64OK()
		if !ok || id == 0 {
			t.Fatalf("find: no cursor: %s", reply)
		}
		return id
	}
	getMore := func(id int64) int32 {
		return replyCode(cmd(`{"getMore": {"$numberLong": "` + strconv.FormatInt(id, 10) + `"}, "collection": "c", "batchSize": 1, "lsid": ` + retryLSID + `}`))
	}
	id := open()
	if got := replyCode(cmd(`{"refreshSessions": [` + retryLSID + `]}`)); got != 0 {
		t.Fatalf("refreshSessions: code %d", got)
	}
	if got := replyCode(cmd(`{"killSessions": [` + retryLSID + `]}`)); got != 0 {
		t.Fatalf("killSessions: code %d", got)
	}
	if got := getMore(id); got != 43 {
		t.Fatalf("getMore after killSessions: code %d, want 43 CursorNotFound", got)
	}
	id = open()
	e.Cursors.Expire(time.Now())
	if got := getMore(id); got != 0 {
		t.Fatalf("getMore of a live session's cursor: code %d", got)
	}
	e.Cursors.Expire(time.Now().Add(session.DefaultTimeout + time.Minute))
	if got := getMore(id); got != 43 {
		t.Fatalf("getMore after the session expired: code %d, want 43 CursorNotFound", got)
	}
}
