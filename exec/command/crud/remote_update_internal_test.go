package crud

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// TestCompactUpdateEligible checks which statements of an update go as a compact request
// (route.ShardUpdate) and which take _cleaveShardModify: only {q, u} with u a document,
// single, without upsert, in a command without let or the bypass options, on one partition
// of one shard; a retryable one carries its lsid and txnNumber.
func TestCompactUpdateEligible(t *testing.T) {
	const cmd = `"update": "c", "updates": [], "$db": "d"`
	const retryable = `, "lsid": {"id": {"$binary": {"base64": "MDEyMzQ1Njc4OWFiY2RlZg==", "subType": "04"}}}, "txnNumber": {"$numberLong": "4"}`
	one := &NodePart{shard: 2, shards: []int{2}, Ranges: [][2]uint64{{10, 20}}}
	for _, tc := range []struct {
		name, stmt, body string
		part             *NodePart
		want             bool
	}{
		{"Set", `{"q": {"_id": 1}, "u": {"$set": {"v": 1}}}`, cmd, one, true},
		{"SetRetryable", `{"q": {"_id": 1}, "u": {"$set": {"v": 1}}}`, cmd + retryable, one, true},
		{"ExplicitSingle", `{"q": {"_id": 1}, "u": {"$set": {"v": 1}}, "multi": false, "upsert": false}`, cmd, one, true},
		{"Replacement", `{"q": {"_id": 1}, "u": {"v": 1}}`, cmd, one, true},
		{"Upsert", `{"q": {"_id": 1}, "u": {"$set": {"v": 1}}, "upsert": true}`, cmd, one, false},
		{"Pipeline", `{"q": {"_id": 1}, "u": [{"$set": {"v": 1}}]}`, cmd, one, false},
		{"ArrayFilters", `{"q": {"_id": 1}, "u": {"$set": {"a.$[x]": 1}}, "arrayFilters": [{"x": 1}]}`, cmd, one, false},
		{"Collation", `{"q": {"_id": "a"}, "u": {"$set": {"v": 1}}, "collation": {"locale": "en"}}`, cmd, one, false},
		{"Hint", `{"q": {"_id": 1}, "u": {"$set": {"v": 1}}, "hint": {"_id": 1}}`, cmd, one, false},
		{"Let", `{"q": {"_id": 1}, "u": {"$set": {"v": 1}}}`, cmd + `, "let": {"x": 1}`, one, false},
		{"Bypass", `{"q": {"_id": 1}, "u": {"$set": {"v": 1}}}`, cmd + `, "bypassDocumentValidation": true`, one, false},
		{"TwoRanges", `{"q": {"_id": 1}, "u": {"$set": {"v": 1}}}`, cmd, &NodePart{shard: 2, shards: []int{2}, Ranges: [][2]uint64{{10, 20}, {30, 40}}}, false},
		{"TwoShards", `{"q": {"_id": 1}, "u": {"$set": {"v": 1}}}`, cmd, &NodePart{shard: 2, shards: []int{2, 3}, Ranges: [][2]uint64{{10, 20}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stmt := streamtest.ExtDoc(t, tc.stmt)
			r := &command.Request{DB: "d", Body: streamtest.ExtDoc(t, "{"+tc.body+"}")}
			op := &write.Op{CI: &catalog.Coll{Meta: &store.Collection{Name: "c", ID: 7}}, Sync: true}
			ms := &ModifyStmt{Kind: "update", list: "updates", Index: 3,
				stmt: bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: stmt}}
			u := compactUpdate(r, op, ms, tc.part)
			if (u != nil) != tc.want {
				t.Fatalf("compact: %v, want %v", u != nil, tc.want)
			}
			if u == nil {
				return
			}
			if u.Coll != "c" || u.CollID != 7 || u.DB != "d" || u.Shard != 2 || u.Lo != 10 || u.Hi != 20 || u.Stmt != 3 || !u.Sync ||
				string(u.Q) != string(stmt.Lookup("q").Document()) || string(u.U) != string(stmt.Lookup("u").Document()) {
				t.Errorf("request %+v", u)
			}
			if retried := u.LSID != nil; retried != (r.Body.Lookup("txnNumber").Type != 0) || retried && u.TxnNumber != 4 {
				t.Errorf("session fields: lsid %v, txnNumber %d", u.LSID, u.TxnNumber)
			}
		})
	}
}
