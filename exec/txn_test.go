package exec

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
)

// handle sends one command through the connection handler and returns its reply, ok or not.
func handle(tb testing.TB, c wire.ConnHandler, body bsoncore.Document) bsoncore.Document {
	tb.Helper()
	reply, err := c.Handle(context.Background(), &wire.Request{Body: body})
	if err != nil {
		tb.Fatal(err)
	}
	return reply
}

// replyCode is the code of an {ok: 0} reply, 0 for {ok: 1}.
func replyCode(reply bsoncore.Document) int32 {
	c, _ := reply.Lookup("code").Int32OK()
	return c
}

// replyLabels are the errorLabels of a reply.
func replyLabels(reply bsoncore.Document) []string {
	arr, ok := reply.Lookup("errorLabels").ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	var labels []string
	for _, v := range vals {
		labels = append(labels, v.StringValue())
	}
	return labels
}

// txnSession is a session of the transaction tests: its lsid byte, and the transaction
// number its statements carry.
type txnSession struct {
	t   *testing.T
	c   wire.ConnHandler
	id  byte
	txn int64
}

// cmd runs json (on db txn, admin for commit and abort) as a statement of the session's
// transaction; first adds startTransaction.
func (s *txnSession) cmd(first bool, json string) bsoncore.Document {
	s.t.Helper()
	body := streamtest.ExtDoc(s.t, json)
	name := body.Index(0).Key()
	db := "txn"
	if name == "commitTransaction" || name == "abortTransaction" {
		db = "admin"
	}
	id := make([]byte, 16)
	id[15] = s.id
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = append(b, body[4:len(body)-1]...)
	b = bsoncore.AppendDocumentElement(b, "lsid", bsoncore.NewDocumentBuilder().AppendBinary("id", 4, id).Build())
	b = bsoncore.AppendInt64Element(b, "txnNumber", s.txn)
	if first {
		b = bsoncore.AppendBooleanElement(b, "startTransaction", true)
	}
	b = bsoncore.AppendBooleanElement(b, "autocommit", false)
	b = bsoncore.AppendStringElement(b, "$db", db)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return handle(s.t, s.c, b)
}

// ok runs a statement that must succeed.
func (s *txnSession) ok(first bool, json string) bsoncore.Document {
	s.t.Helper()
	reply := s.cmd(first, json)
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 || reply.Lookup("writeErrors").Type != 0 {
		s.t.Fatalf("%s: %v", json, reply)
	}
	return reply
}

// fails runs a statement that must fail with code, and TransientTransactionError when
// transient.
func (s *txnSession) fails(first bool, json string, code int32, transient bool) {
	s.t.Helper()
	reply := s.cmd(first, json)
	if got := replyCode(reply); got != code {
		s.t.Fatalf("%s: code %d, want %d: %v", json, got, code, reply)
	}
	if got := slices.Contains(replyLabels(reply), "TransientTransactionError"); got != transient {
		s.t.Fatalf("%s: TransientTransactionError label %v, want %v: %v", json, got, transient, reply)
	}
}

// plain runs json on db txn outside any session and checks it succeeds.
func plain(t *testing.T, c wire.ConnHandler, json string) bsoncore.Document {
	t.Helper()
	return run(t, c, withDB(streamtest.ExtDoc(t, json), "txn"))
}

// batchIDs returns the _id values (int32) of a find reply's first batch.
func batchIDs(reply bsoncore.Document) []int32 {
	arr, _ := reply.Lookup("cursor", "firstBatch").ArrayOK()
	vals, _ := arr.Values()
	var out []int32
	for _, v := range vals {
		out = append(out, v.Document().Lookup("_id").Int32())
	}
	return out
}

// TestTxnCommitVisibleAtomically checks snapshot isolation: the transaction reads its own
// writes, others do not see them until commit, then see all of them.
func TestTxnCommitVisibleAtomically(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	plain(t, c, `{"insert": "c", "documents": [{"_id": 0, "v": 0}]}`)
	s := &txnSession{t: t, c: c, id: 1, txn: 1}
	s.ok(true, `{"insert": "c", "documents": [{"_id": 1, "v": 1}, {"_id": 2, "v": 2}]}`)
	s.ok(false, `{"update": "c", "updates": [{"q": {"_id": 0}, "u": {"$set": {"v": 10}}}]}`)
	s.ok(false, `{"delete": "c", "deletes": [{"q": {"_id": 2}, "limit": 1}]}`)
	if got := batchIDs(s.ok(false, `{"find": "c", "filter": {"v": {"$gte": 1}}}`)); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("inside: %v, want [0 1]", got)
	}
	if got := batchIDs(plain(t, c, `{"find": "c", "filter": {"v": {"$gte": 1}}}`)); len(got) != 0 {
		t.Fatalf("outside before commit: %v, want none", got)
	}
	// An index on v serves the read through the overlay's index entries.
	s2 := &txnSession{t: t, c: c, id: 2, txn: 1}
	s.ok(false, `{"commitTransaction": 1}`)
	plain(t, c, `{"createIndexes": "c", "indexes": [{"key": {"v": 1}, "name": "v_1"}]}`)
	s2.ok(true, `{"insert": "c", "documents": [{"_id": 5, "v": 5}]}`)
	if got := batchIDs(s2.ok(false, `{"find": "c", "filter": {"v": {"$gte": 5}}, "hint": "v_1"}`)); !slices.Equal(got, []int32{5, 0}) {
		t.Fatalf("index read inside: %v, want [5 0]", got)
	}
	s2.ok(false, `{"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 1}]}`)
	if got := batchIDs(s2.ok(false, `{"find": "c", "filter": {"v": {"$gte": 0}}, "sort": {"v": -1}, "hint": "v_1"}`)); !slices.Equal(got, []int32{0, 5}) {
		t.Fatalf("reverse index read inside: %v, want [0 5]", got)
	}
	s2.ok(false, `{"insert": "c", "documents": [{"_id": 1, "v": 1}]}`)
	s2.ok(false, `{"commitTransaction": 1}`)
	if got := batchIDs(plain(t, c, `{"find": "c", "filter": {}, "sort": {"_id": 1}}`)); !slices.Equal(got, []int32{0, 1, 5}) {
		t.Fatalf("after commit: %v, want [0 1 5]", got)
	}
	if got := batchIDs(plain(t, c, `{"find": "c", "filter": {"v": 10}}`)); !slices.Equal(got, []int32{0}) {
		t.Fatalf("update after commit: %v", got)
	}
}

// TestTxnAbortLeavesNothing checks that an aborted transaction writes nothing and that its
// later statements answer NoSuchTransaction with the transient label.
func TestTxnAbortLeavesNothing(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	s := &txnSession{t: t, c: c, id: 1, txn: 3}
	s.ok(true, `{"insert": "c", "documents": [{"_id": 1}]}`)
	s.ok(false, `{"abortTransaction": 1}`)
	if n, _ := plain(t, c, `{"count": "c"}`).Lookup("n").AsInt64OK(); n != 0 {
		t.Fatalf("count after abort: %d", n)
	}
	s.fails(false, `{"insert": "c", "documents": [{"_id": 2}]}`, 251, true)
	s.fails(false, `{"commitTransaction": 1}`, 251, true)
	// A failed statement (duplicate key) aborts the transaction too.
	plain(t, c, `{"insert": "c", "documents": [{"_id": 7}]}`)
	s.txn = 4
	s.ok(true, `{"insert": "c", "documents": [{"_id": 8}]}`)
	if reply := s.cmd(false, `{"insert": "c", "documents": [{"_id": 7}]}`); reply.Lookup("writeErrors").Type == 0 {
		t.Fatalf("duplicate insert: %v", reply)
	}
	s.fails(false, `{"commitTransaction": 1}`, 251, true)
	// Commands a transaction may not run.
	s.txn = 5
	s.fails(true, `{"count": "c"}`, 263, false)
	s.ok(true, `{"find": "c"}`)
	s.fails(false, `{"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}`, 263, false)
	s.txn = 6
	s.fails(true, `{"aggregate": "c", "pipeline": [{"$out": "d"}], "cursor": {}}`, 263, false)
	s.txn = 2
	s.fails(true, `{"find": "c"}`, 225, false)
}

// TestTxnWriteConflict checks first-writer-wins between open transactions, and the commit
// check against writes committed since the snapshot.
func TestTxnWriteConflict(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	plain(t, c, `{"insert": "c", "documents": [{"_id": 1, "n": 0}, {"_id": 2, "n": 0}]}`)
	a := &txnSession{t: t, c: c, id: 1, txn: 1}
	b := &txnSession{t: t, c: c, id: 2, txn: 1}
	a.ok(true, `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}`)
	b.fails(true, `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}`, 112, true)
	b.fails(false, `{"commitTransaction": 1}`, 251, true)
	a.ok(false, `{"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$inc": {"n": 1}}}]}`)
	// A write outside the transaction to a document it wrote waits for it to end, as in
	// MongoDB: maxTimeMS bounds the wait (50), and without it the write applies on top of
	// the commit.
	late := `{"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$inc": {"n": 100}}}]`
	if got := replyCode(handle(t, c, withDB(streamtest.ExtDoc(t, late+`, "maxTimeMS": 50}`), "txn"))); got != 50 {
		t.Fatalf("bounded write to a document of an open transaction: code %d, want 50", got)
	}
	c2 := e.Connect(wire.ConnInfo{ID: 2})
	waited := make(chan bsoncore.Document)
	go func() { waited <- handle(t, c2, withDB(streamtest.ExtDoc(t, late+`}`), "txn")) }()
	select {
	case reply := <-waited:
		t.Fatalf("the write did not wait for the transaction: %v", reply)
	case <-time.After(100 * time.Millisecond):
	}
	a.ok(false, `{"commitTransaction": 1}`)
	if reply := <-waited; replyCode(reply) != 0 {
		t.Fatalf("the write after the commit: %v", reply)
	}
	if got := plain(t, c, `{"find": "c", "filter": {"_id": 2}}`); got.Lookup("cursor", "firstBatch", "0", "n").Int32() != 101 {
		t.Fatalf("_id 2 after the transaction and the write that waited: %v, want n: 101", got)
	}
	// A write committed since the snapshot to a document the transaction then writes: 112.
	a.txn = 2
	a.ok(true, `{"find": "c", "filter": {"_id": 1}}`)
	plain(t, c, `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 100}}}]}`)
	a.fails(false, `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}`, 112, true)
	a.fails(false, `{"find": "c"}`, 251, true)
	plain(t, c, `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": -101}}}]}`)
	// The retry (the next txnNumber) succeeds, and a retried commit answers ok once applied.
	a.txn = 3
	a.ok(true, `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}`)
	a.ok(false, `{"commitTransaction": 1}`)
	a.ok(false, `{"commitTransaction": 1}`)
	forgetSessions(e) // as after a restart: the record answers
	a.ok(false, `{"commitTransaction": 1}`)
	a.fails(false, `{"abortTransaction": 1}`, 256, false)
	if got := plain(t, c, `{"find": "c", "filter": {"_id": 1}}`); !slices.Equal(batchIDs(got), []int32{1}) ||
		got.Lookup("cursor", "firstBatch", "0", "n").Int32() != 1 {
		t.Fatalf("after the retried commit: %v", got)
	}
	// Expired transactions give their documents up.
	e.Txns.Lifetime.Store(int64(time.Millisecond))
	a.txn = 4
	a.ok(true, `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}`)
	time.Sleep(5 * time.Millisecond)
	b.txn = 2
	b.ok(true, `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}`)
	a.fails(false, `{"commitTransaction": 1}`, 251, true)
}

// TestTxnOneShard checks the scope rule: a transaction bound to one shard by its first
// operation fails (and aborts) when an operation reaches another.
func TestTxnOneShard(t *testing.T) {
	e := testExecutor(t, 2, Options{PartitionCheckInterval: time.Hour})
	c := e.Connect(wire.ConnInfo{ID: 1})
	run(t, c, withDB(streamtest.ExtDoc(t, `{"shardCollection": "txn.s", "key": {"k": "hashed"}, "numInitialChunks": 4}`), "admin"))
	s := &txnSession{t: t, c: c, id: 1, txn: 1}
	// One logical partition always works.
	s.ok(true, `{"insert": "s", "documents": [{"_id": 1, "k": "a"}, {"_id": 2, "k": "a"}]}`)
	s.ok(false, `{"update": "s", "updates": [{"q": {"k": "a", "_id": 1}, "u": {"$set": {"x": 1}}}]}`)
	if got := batchIDs(s.ok(false, `{"find": "s", "filter": {"k": "a"}, "sort": {"_id": 1}}`)); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("inside: %v", got)
	}
	s.ok(false, `{"commitTransaction": 1}`)
	// A query on every partition reaches both shards.
	s.txn = 2
	s.ok(true, `{"find": "s", "filter": {"k": "a"}}`)
	reply := s.cmd(false, `{"find": "s", "filter": {}}`)
	if replyCode(reply) != 263 {
		t.Fatalf("broadcast find: %v", reply)
	}
	s.fails(false, `{"commitTransaction": 1}`, 251, true)
}
