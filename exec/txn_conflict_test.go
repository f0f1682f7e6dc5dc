package exec

import (
	"slices"
	"testing"

	"github.com/cleavedb/cleave/wire"
)

// TestTxnUniqueKeyConflict checks that two transactions never both commit one key of a
// unique index, nor one _id: the second writer gets 112 WriteConflict with
// TransientTransactionError at its write while the first is open, or when the first
// committed after its snapshot; a write that reached the store after the transaction took
// the key fails the commit the same way.
func TestTxnUniqueKeyConflict(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	plain(t, c, `{"createIndexes": "u", "indexes": [{"key": {"email": 1}, "name": "email_1", "unique": true}]}`)
	a := &txnSession{t: t, c: c, id: 1, txn: 1}
	b := &txnSession{t: t, c: c, id: 2, txn: 1}
	// Both open: the second writer of the key conflicts, whatever its _id.
	a.ok(true, `{"insert": "u", "documents": [{"_id": 1, "email": "x"}]}`)
	b.fails(true, `{"insert": "u", "documents": [{"_id": 2, "email": "x"}]}`, 112, true)
	b.fails(false, `{"commitTransaction": 1}`, 251, true)
	a.ok(false, `{"commitTransaction": 1}`)
	// The first committed after the second's snapshot: the second's write conflicts.
	a.txn, b.txn = 2, 2
	b.ok(true, `{"find": "u", "filter": {"_id": 0}}`)
	a.ok(true, `{"insert": "u", "documents": [{"_id": 3, "email": "y"}]}`)
	a.ok(false, `{"commitTransaction": 1}`)
	b.fails(false, `{"update": "u", "updates": [{"q": {"_id": 4}, "u": {"$set": {"email": "y"}}, "upsert": true}]}`, 112, true)
	// A write outside any transaction that got past the wait for open transactions (write.Gate)
	// before the transaction took the key: the commit rechecks under the key locks.
	a.txn = 3
	a.ok(true, `{"insert": "u", "documents": [{"_id": 5, "email": "z"}]}`)
	e.Write.WithGate(nil)
	plain(t, c, `{"insert": "u", "documents": [{"_id": 6, "email": "z"}]}`)
	e.Write.WithGate(e.Txns)
	a.fails(false, `{"commitTransaction": 1}`, 112, true)
	// A key the transaction took back from its own document, and a key freed by an
	// update in the same transaction, are no conflict.
	a.txn = 4
	a.ok(true, `{"update": "u", "updates": [{"q": {"_id": 1}, "u": {"$set": {"email": "x2"}}}]}`)
	a.ok(false, `{"insert": "u", "documents": [{"_id": 7, "email": "x"}]}`)
	a.ok(false, `{"commitTransaction": 1}`)
	// _id: the second insert of one _id conflicts, open or committed since the snapshot.
	a.txn, b.txn = 5, 3
	a.ok(true, `{"insert": "u", "documents": [{"_id": 8}]}`)
	b.fails(true, `{"insert": "u", "documents": [{"_id": 8}]}`, 112, true)
	b.txn = 4
	b.ok(true, `{"find": "u", "filter": {"_id": 0}}`)
	a.ok(false, `{"commitTransaction": 1}`)
	b.fails(false, `{"insert": "u", "documents": [{"_id": 8}]}`, 112, true)
	got := plain(t, c, `{"find": "u", "sort": {"_id": 1}}`)
	if ids := batchIDs(got); !slices.Equal(ids, []int32{1, 3, 6, 7, 8}) {
		t.Fatalf("documents after the transactions: %v, want _id 1, 3, 6, 7, 8", got)
	}
}
