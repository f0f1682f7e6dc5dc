package exec

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
)

// retryLSID is the session of the retryable-write tests, as Extended JSON.
const retryLSID = `{"id": {"$binary": {"base64": "AAECAwQFBgcICQoLDA0ODw==", "subType": "04"}}}`

// retryCmd runs json with the test session and txnNumber txn added, and returns the reply.
func retryCmd(t *testing.T, c wire.ConnHandler, txn int64, json string) bsoncore.Document {
	t.Helper()
	body := streamtest.ExtDoc(t, json)
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = append(b, body[4:len(body)-1]...)
	b = bsoncore.AppendDocumentElement(b, "lsid", streamtest.ExtDoc(t, retryLSID))
	b = bsoncore.AppendInt64Element(b, "txnNumber", txn)
	b = bsoncore.AppendStringElement(b, "$db", "retry")
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return handle(t, c, b)
}

// replyFields renders a reply without its volatile fields, for comparisons.
func replyFields(reply bsoncore.Document) string {
	elems, _ := reply.Elements()
	s := ""
	for _, el := range elems {
		switch el.Key() {
		case "operationTime", "$clusterTime":
			continue
		}
		s += el.String()
	}
	return s
}

// forgetSessions drops the executor's in-memory session state, as a restart does: what
// remains is in the store.
func forgetSessions(e *Executor) {
	e.Sessions.Forget()
}

// TestRetryableWriteTxnApplyOnce checks that each write command, sent twice with the same
// lsid and txnNumber (and again after the session cache is forgotten, as after a restart),
// is applied once and answers the same reply each time.
func TestRetryableWriteTxnApplyOnce(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("Shards%d", shards), func(t *testing.T) {
			e := testExecutor(t, shards, Options{PartitionCheckInterval: time.Hour})
			c := e.Connect(wire.ConnInfo{ID: 1})
			if shards > 1 {
				run(t, c, withDB(streamtest.ExtDoc(t, `{"shardCollection": "retry.c", "key": {"_id": "hashed"}, "numInitialChunks": 6}`), "admin"))
			}
			steps := []struct {
				txn  int64
				cmd  string
				want string // a field the reply must hold, as Extended JSON of the reply's element
			}{
				{1, `{"insert": "c", "documents": [{"_id": 1, "x": 0}, {"_id": 2, "x": 0}, {"_id": 3, "x": 0}]}`, `"n": {"$numberInt":"3"}`},
				{2, `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"x": 1}}}, {"q": {"_id": 9}, "u": {"$inc": {"x": 1}}, "upsert": true}, {"q": {"_id": 2}, "u": {"$set": {"x": 0}}}]}`, `"nModified": {"$numberInt":"1"}`},
				{3, `{"findAndModify": "c", "query": {"_id": 2}, "update": {"$inc": {"x": 5}}, "new": true}`, `"x": {"$numberInt":"5"}`},
				{4, `{"delete": "c", "deletes": [{"q": {"_id": 3}, "limit": 1}, {"q": {"_id": 42}, "limit": 1}]}`, `"n": {"$numberInt":"1"}`},
				{5, `{"insert": "c", "documents": [{"_id": 10}, {"_id": 1}, {"_id": 11}], "ordered": false}`, `"n": {"$numberInt":"2"}`},
			}
			for _, st := range steps {
				first := replyFields(retryCmd(t, c, st.txn, st.cmd))
				again := replyFields(retryCmd(t, c, st.txn, st.cmd))
				forgetSessions(e)
				restarted := replyFields(retryCmd(t, c, st.txn, st.cmd))
				if first != again || first != restarted {
					t.Fatalf("txn %d: replies differ:\nfirst   %s\nretry   %s\nrestart %s", st.txn, first, again, restarted)
				}
				if !strings.Contains(first, st.want) {
					t.Fatalf("txn %d: reply %s lacks %s", st.txn, first, st.want)
				}
			}
			got := run(t, c, withDB(streamtest.ExtDoc(t, `{"find": "c", "sort": {"_id": 1}}`), "retry"))
			want := `[{"_id": {"$numberInt":"1"},"x": {"$numberInt":"1"}},{"_id": {"$numberInt":"2"},"x": {"$numberInt":"5"}},` +
				`{"_id": {"$numberInt":"9"},"x": {"$numberInt":"1"}},{"_id": {"$numberInt":"10"}},{"_id": {"$numberInt":"11"}}]`
			if batch := got.Lookup("cursor", "firstBatch").String(); batch != want {
				t.Fatalf("documents:\n got %s\nwant %s", batch, want)
			}
		})
	}
}

// TestRetryableWriteTxnTooOld checks that an older txnNumber answers 225 TransactionTooOld,
// also after a restart, and that a newer one runs.
func TestRetryableWriteTxnTooOld(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	retryCmd(t, c, 5, `{"insert": "c", "documents": [{"_id": 1}]}`)
	if got := replyCode(retryCmd(t, c, 4, `{"insert": "c", "documents": [{"_id": 2}]}`)); got != 225 {
		t.Fatalf("older txnNumber: code %d, want 225", got)
	}
	forgetSessions(e)
	if got := replyCode(retryCmd(t, c, 4, `{"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}]}`)); got != 225 {
		t.Fatalf("older txnNumber after a restart: code %d, want 225", got)
	}
	reply := retryCmd(t, c, 6, `{"insert": "c", "documents": [{"_id": 1}]}`)
	if reply.Lookup("writeErrors").Type == 0 {
		t.Fatalf("a new txnNumber re-inserting _id 1: want E11000, got %s", reply)
	}
}

// TestRetryableWriteNewTxnNumber checks that a session's next txnNumber starts with no
// statement executed, though the session's state is reused in memory (Retry.Renew): each
// command's statement 0 runs, whatever its previous txnNumber recorded (a plain insert, a
// findAndModify's image), and a retry of the new one still answers from its record.
func TestRetryableWriteNewTxnNumber(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	steps := []struct {
		cmd, want string
	}{
		{`{"insert": "c", "documents": [{"_id": 1, "x": 0}]}`, `"n": {"$numberInt":"1"}`},
		{`{"findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"x": 1}}, "new": true}`, `"x": {"$numberInt":"1"}`},
		{`{"insert": "c", "documents": [{"_id": 2}]}`, `"n": {"$numberInt":"1"}`},
		{`{"findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"x": 1}}, "new": true}`, `"x": {"$numberInt":"2"}`},
		{`{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"x": 10}}}]}`, `"nModified": {"$numberInt":"1"}`},
	}
	for i, st := range steps {
		txn := int64(i + 1)
		first := replyFields(retryCmd(t, c, txn, st.cmd))
		if !strings.Contains(first, st.want) {
			t.Fatalf("txn %d: reply %s lacks %s", txn, first, st.want)
		}
		if again := replyFields(retryCmd(t, c, txn, st.cmd)); again != first {
			t.Fatalf("txn %d: the retry answered %s, the first %s", txn, again, first)
		}
	}
	got := run(t, c, withDB(streamtest.ExtDoc(t, `{"find": "c", "sort": {"_id": 1}}`), "retry"))
	want := `[{"_id": {"$numberInt":"1"},"x": {"$numberInt":"12"}},{"_id": {"$numberInt":"2"}}]`
	if batch := got.Lookup("cursor", "firstBatch").String(); batch != want {
		t.Fatalf("documents:\n got %s\nwant %s", batch, want)
	}
}
