package exec

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
)

// TestReadConcernLinearizable: on shards that are not replicated every acknowledged write is
// already applied, so find, count, distinct and aggregate accept readConcern "linearizable"
// and read what was written (a count without a filter too, which then reads the documents);
// MongoDB's parse errors apply: afterClusterTime (72 InvalidOptions), afterOpTime (9
// FailedToParse), a transaction (72), $out (72).
func TestReadConcernLinearizable(t *testing.T) {
	e := testExecutor(t, 2, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	cmd := func(json string) bsoncore.Document { return handle(t, c, withDB(streamtest.ExtDoc(t, json), "lin")) }
	cmd(`{"insert": "c", "documents": [{"_id": 1, "v": 1}, {"_id": 2, "v": 2}, {"_id": 3, "v": 2}]}`)
	const lin = `"readConcern": {"level": "linearizable"}`
	ok := func(reply bsoncore.Document) bsoncore.Document {
		t.Helper()
		if v, _ := reply.Lookup("ok").AsFloat64OK(); v != 1 {
			t.Fatalf("linearizable read failed: %s", reply)
		}
		return reply
	}
	if got := ok(cmd(`{"find": "c", "filter": {"_id": 2}, ` + lin + `}`)); got.Lookup("cursor", "firstBatch", "0", "v").Int32() != 2 {
		t.Fatalf("find by _id: %s", got)
	}
	if n := ok(cmd(`{"count": "c", ` + lin + `}`)).Lookup("n").AsInt64(); n != 3 {
		t.Fatalf("count = %d, want 3", n)
	}
	if vals, _ := ok(cmd(`{"distinct": "c", "key": "v", ` + lin + `}`)).Lookup("values").Array().Values(); len(vals) != 2 {
		t.Fatalf("distinct values = %v, want 2", vals)
	}
	agg := ok(cmd(`{"aggregate": "c", "pipeline": [{"$match": {"v": 2}}, {"$count": "n"}], "cursor": {}, ` + lin + `}`))
	if n := agg.Lookup("cursor", "firstBatch", "0", "n").AsInt64(); n != 2 {
		t.Fatalf("aggregate $count = %d, want 2: %s", n, agg)
	}
	for _, tc := range []struct {
		json string
		code int32
		msg  string
	}{
		{`{"find": "c", "readConcern": {"level": "linearizable", "afterClusterTime": {"$timestamp": {"t": 1, "i": 0}}}}`, 72,
			"afterClusterTime field can be set only if level is equal to majority, local, or snapshot"},
		{`{"find": "c", "readConcern": {"level": "linearizable", "afterOpTime": {"ts": {"$timestamp": {"t": 1, "i": 0}}, "t": 1}}}`, 9,
			"afterOpTime not compatible with linearizable read concern"},
		{`{"aggregate": "c", "pipeline": [{"$out": "o"}], "cursor": {}, ` + lin + `}`, 72, "linearizable"},
		{`{"find": "c", ` + lin + `, "lsid": ` + retryLSID + `, "txnNumber": {"$numberLong": "1"}, "startTransaction": true, "autocommit": false}`, 72,
			"The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run in a transaction"},
	} {
		reply := cmd(tc.json)
		if replyCode(reply) != tc.code || !strings.Contains(reply.Lookup("errmsg").StringValue(), tc.msg) {
			t.Errorf("%s: %s, want code %d with %q", tc.json, reply, tc.code, tc.msg)
		}
	}
	// "majority" needs nothing more than "local": what a shard applied is committed.
	if n := ok(cmd(`{"count": "c", "query": {"v": 2}, "readConcern": {"level": "majority"}}`)).Lookup("n").AsInt64(); n != 2 {
		t.Fatalf("majority count = %d, want 2", n)
	}
}
