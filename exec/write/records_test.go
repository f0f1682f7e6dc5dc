package write

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/store"
)

// TestMergeRecordsKeptByLaterWrite: a session's retryable write executes statement 0 on this
// node; a move from another node then merges that node's record of the session (statement 1,
// executed there) into the shard (MergeRecords); the session's next statement, 2, runs here
// with the state the node had loaded before the merge. Its batch replaces the shard's record:
// it must keep statement 1, or a retry of it reaching this node would apply it again (before
// the record gate, it wrote {0, 2} over the merged {0, 1}).
func TestMergeRecordsKeptByLaterWrite(t *testing.T) {
	ctx := context.Background()
	cat := fixture.Stores(t, 1)
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c"})
	p := NewPath(cat, query.New(cat, query.Options{}), nil)
	lsid := []byte("0123456789abcdef")
	insert := func(rt *Retry, stmt int) {
		t.Helper()
		doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(stmt)).Build()
		var res Results
		if _, err := p.Insert(ctx, ci, []bsoncore.Value{bsonx.DocValue(doc)}, stmt, true, false, Concern{}, &res, rt); err != nil || res.N != 1 {
			t.Fatalf("insert of statement %d: %d, %v %v", stmt, res.N, err, res.Errs)
		}
	}
	rt := NewRetry(lsid, 5)
	insert(rt, 0)

	other := NewRetry(lsid, 5) // the source node's record: statement 1 ran there
	other.add(StmtResult{Stmt: 1, Matched: 1})
	if n, err := p.MergeRecords(0, []TxnRecord{{LSID: lsid, Rec: other.encodeAt(0, time.Now())}}); err != nil || n != 1 {
		t.Fatalf("merge: %d, %v", n, err)
	}
	insert(rt, 2) // the session's state as the node holds it, loaded before the merge

	got, err := p.LoadRetry(lsid)
	if err != nil || got == nil {
		t.Fatalf("load: %v, %v", got, err)
	}
	for _, stmt := range []int32{0, 1, 2} {
		if _, ok := got.Executed(stmt); !ok {
			t.Errorf("statement %d is not recorded after the merge and the next write", stmt)
		}
	}
	if _, ok := rt.Executed(1); !ok {
		t.Error("the session's state did not take in the merged statement 1")
	}
}
