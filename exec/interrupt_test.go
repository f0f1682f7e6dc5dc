package exec

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// handleJSON runs the command given in Extended JSON (with "$db": "t" added) under ctx.
func handleJSON(ctx context.Context, t *testing.T, c wire.ConnHandler, cmdJSON string) bsoncore.Document {
	t.Helper()
	return handleJSONOn(ctx, t, c, "t", cmdJSON)
}

// handleJSONOn runs the command given in Extended JSON on database db under ctx.
func handleJSONOn(ctx context.Context, t *testing.T, c wire.ConnHandler, db, cmdJSON string) bsoncore.Document {
	t.Helper()
	body := streamtest.ExtDoc(t, cmdJSON)
	b := bsoncore.NewDocumentBuilder()
	elems, _ := body.Elements()
	for _, el := range elems {
		b.AppendValue(el.Key(), el.Value())
	}
	reply, err := c.Handle(ctx, &wire.Request{Body: b.AppendString("$db", db).Build()})
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

// TestWriteMaxTimeMSWaitingForLocks checks that insert, update, delete and findAndModify
// blocked on key locks past their maxTimeMS fail with MaxTimeMSExpired and change nothing,
// even once the locks are free again.
func TestWriteMaxTimeMSWaitingForLocks(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	handleJSON(context.Background(), t, c, `{"insert": "c", "documents": [{"_id": 1, "a": 0}]}`)
	unlock := e.Cat.Locks().LockAll() // another writer holding every key
	for _, cmd := range []string{
		`{"insert": "c", "documents": [{"_id": 2}], "maxTimeMS": 50}`,
		`{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}}], "maxTimeMS": 50}`,
		`{"update": "c", "updates": [{"q": {"a": 0}, "u": {"$set": {"a": 1}}, "multi": true}], "maxTimeMS": 50}`,
		`{"update": "c", "updates": [{"q": {"_id": 3}, "u": {"$set": {"a": 1}}, "upsert": true}], "maxTimeMS": 50}`,
		`{"delete": "c", "deletes": [{"q": {}, "limit": 0}], "maxTimeMS": 50}`,
		`{"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"a": 1}}, "maxTimeMS": 50}`,
	} {
		// The locks stay held until after the loop: a write that ignored its maxTimeMS would
		// never answer (the test's timeout), so no clock is needed to tell.
		reply := handleJSON(context.Background(), t, c, cmd)
		if code, _ := reply.Lookup("code").Int32OK(); mongoerr.Code(code) != mongoerr.MaxTimeMSExpired {
			t.Errorf("%s: %v, want MaxTimeMSExpired", cmd, reply)
		}
	}
	unlock()
	time.Sleep(50 * time.Millisecond) // a write that was not really abandoned would land now
	reply := handleJSON(context.Background(), t, c, `{"find": "c", "filter": {}}`)
	docs, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
	if len(docs) != 1 || docs[0].Document().Lookup("a").AsInt64() != 0 {
		t.Fatalf("collection changed by timed-out writes: %v", reply)
	}
}

// TestWriteClientDisconnectWaitingForLocks checks that a write waiting for key locks ends
// with ClientDisconnect when its connection's context is cancelled, and applies nothing.
func TestWriteClientDisconnectWaitingForLocks(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	handleJSON(context.Background(), t, c, `{"insert": "c", "documents": [{"_id": 1}]}`)
	unlock := e.Cat.Locks().LockAll()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bsoncore.Document)
	go func() { done <- handleJSON(ctx, t, c, `{"insert": "c", "documents": [{"_id": 2}]}`) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	var reply bsoncore.Document
	select {
	case reply = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the insert still waits after its context was cancelled")
	}
	unlock()
	if code, _ := reply.Lookup("code").Int32OK(); mongoerr.Code(code) != mongoerr.ClientDisconnect {
		t.Fatalf("reply %v, want ClientDisconnect", reply)
	}
	c2 := e.Connect(wire.ConnInfo{ID: 2})
	reply = handleJSON(context.Background(), t, c2, `{"count": "c"}`)
	if n := reply.Lookup("n").AsInt64(); n != 1 {
		t.Fatalf("count = %d, want 1", n)
	}
}

// TestFindCursorCapPerConnection checks MaxCursorsPerConnection: the cursor beyond it fails
// with OperationFailed, another connection is not affected, and killing one frees a slot.
func TestFindCursorCapPerConnection(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	bg := context.Background()
	handleJSON(bg, t, c, `{"insert": "c", "documents": [{"_id": 1}, {"_id": 2}]}`)
	var last int64
	for i := range MaxCursorsPerConnection {
		reply := handleJSON(bg, t, c, `{"find": "c", "batchSize": 1}`)
		if last = reply.Lookup("cursor", "id").Int64(); last == 0 {
			t.Fatalf("find %d: %v", i, reply)
		}
	}
	reply := handleJSON(bg, t, c, `{"find": "c", "batchSize": 1}`)
	if code, _ := reply.Lookup("code").Int32OK(); mongoerr.Code(code) != mongoerr.OperationFailed {
		t.Fatalf("cursor beyond the cap: %v", reply)
	}
	other := e.Connect(wire.ConnInfo{ID: 2})
	if reply := handleJSON(bg, t, other, `{"find": "c", "batchSize": 1}`); reply.Lookup("cursor", "id").Int64() == 0 {
		t.Fatalf("another connection: %v", reply)
	}
	kill := bsoncore.NewDocumentBuilder().AppendString("killCursors", "c").
		AppendArray("cursors", bsoncore.NewArrayBuilder().AppendInt64(last).Build()).AppendString("$db", "t").Build()
	run(t, c, kill)
	if reply := handleJSON(bg, t, c, `{"find": "c", "batchSize": 1}`); reply.Lookup("cursor", "id").Int64() == 0 {
		t.Fatalf("after killCursors: %v", reply)
	}
}

// TestDDLWaitRespectsMaxTime: a DDL command waiting for the DDL lock (an index build or an
// incoming move holds it) gives up at its maxTimeMS with MaxTimeMSExpired, as MongoDB's
// lock waits do, and leaves nothing done; once the lock is free the same commands run.
func TestDDLWaitRespectsMaxTime(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	bg := context.Background()
	handleJSON(bg, t, c, `{"insert": "c", "documents": [{"_id": 1, "a": 1}]}`)
	handleJSON(bg, t, c, `{"insert": "d", "documents": [{"_id": 1}]}`)
	cmds := []struct{ db, cmd string }{
		{"t", `{"collMod": "c", "validator": {"a": {"$exists": true}}, "maxTimeMS": 50}`},
		{"t", `{"create": "n", "maxTimeMS": 50}`},
		{"admin", `{"renameCollection": "t.c", "to": "t.e", "maxTimeMS": 50}`},
		{"t", `{"drop": "d", "maxTimeMS": 50}`},
	}
	unlock := e.Cat.LockDDL() // held elsewhere
	for _, x := range cmds {
		reply := handleJSONOn(bg, t, c, x.db, x.cmd)
		if code, _ := reply.Lookup("code").Int32OK(); code != int32(mongoerr.MaxTimeMSExpired) {
			unlock()
			t.Fatalf("%s while the DDL lock is held: %v, want MaxTimeMSExpired", x.cmd, reply)
		}
	}
	unlock()
	reply := handleJSON(bg, t, c, `{"listCollections": 1, "nameOnly": true}`)
	if vals, _ := reply.Lookup("cursor", "firstBatch").Array().Values(); len(vals) != 2 {
		t.Fatalf("collections after the timed-out commands: %v, want c and d", reply)
	}
	reply = handleJSON(bg, t, c, `{"listCollections": 1, "filter": {"name": "c"}}`)
	if v := reply.Lookup("cursor", "firstBatch", "0", "options", "validator"); v.Type != 0 {
		t.Fatalf("c after the timed-out collMod: %v, want no validator", reply)
	}
	for _, x := range cmds {
		if reply := handleJSONOn(bg, t, c, x.db, x.cmd); reply.Lookup("ok").Double() != 1 {
			t.Fatalf("%s with the DDL lock free: %v", x.cmd, reply)
		}
	}
}

// TestFunctionGetMoreOutlivesAggregateConnection: an aggregation's $function runs again in
// each getMore of its cursor, from any connection; the connection that opened the cursor going
// away meanwhile (its context cancelled) does not interrupt it. Connections keep one context
// from request to request, so a scope bound to it would be interrupted by the next cancel.
func TestFunctionGetMoreOutlivesAggregateConnection(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	aCtx, aGone := context.WithCancel(context.Background())
	defer aGone()
	a := e.Connect(wire.ConnInfo{ID: 1})
	b := e.Connect(wire.ConnInfo{ID: 2})
	handleJSON(aCtx, t, a, `{"insert": "f", "documents": [{"_id": 1}, {"_id": 2}]}`)
	// Each document takes 300 ms of JavaScript: the getMore's is under way when a goes.
	r := handleJSON(aCtx, t, a, `{"aggregate": "f", "pipeline": [{"$sort": {"_id": 1}}, {"$project": {"v": {"$function": {
		"body": "function(x) { var end = Date.now() + 300; while (Date.now() < end) {} return x; }", "args": ["$_id"], "lang": "js"}}}}],
		"cursor": {"batchSize": 1}}`)
	id, ok := r.Lookup("cursor", "id").Int64OK()
	if !ok || id == 0 {
		t.Fatalf("aggregate: %v, want an open cursor", r)
	}
	done := make(chan bsoncore.Document)
	go func() {
		done <- handleJSON(context.Background(), t, b, `{"getMore": `+strconv.FormatInt(id, 10)+`, "collection": "f"}`)
	}()
	time.Sleep(100 * time.Millisecond)
	aGone()
	reply := <-done
	batch, _ := reply.Lookup("cursor", "nextBatch").ArrayOK()
	if vals, _ := batch.Values(); len(vals) != 1 || vals[0].Document().Lookup("v").AsInt64() != 2 {
		t.Fatalf("getMore after the aggregate's connection went: %v, want [{_id: 2, v: 2}]", reply)
	}
}
