package route

import (
	"bytes"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestShardUpdateRoundTrip checks that a compact update parses back to what was encoded, with
// and without the session fields of a retryable write, and with the priority a router adds;
// and that a missing or mistyped field is BadValue.
func TestShardUpdateRoundTrip(t *testing.T) {
	q, u := streamtest.ExtDoc(t, `{"_id": "user1"}`), streamtest.ExtDoc(t, `{"$set": {"metricValue": 1.5}}`)
	lsid := streamtest.ExtDoc(t, `{"id": {"$binary": {"base64": "MDEyMzQ1Njc4OWFiY2RlZg==", "subType": "04"}}}`)
	for _, tc := range []struct {
		name string
		u    ShardUpdate
	}{
		{"Plain", ShardUpdate{CompactHead: catalog.CompactHead{DB: "db", Coll: "c", CollID: 7, Rev: 42, Shard: 1}, Lo: 0, Hi: 1 << 62, Q: q, U: u, Stmt: 0, Sync: true}},
		{"Retryable", ShardUpdate{CompactHead: catalog.CompactHead{DB: "mbench", Coll: "telemetry", CollID: 1 << 40, Rev: math.MaxInt64, Shard: 2}, Lo: 1 << 63,
			Hi: math.MaxUint64, Q: q, U: u, Stmt: 3, LSID: lsid, TxnNumber: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := bsoncore.Document(AppendShardUpdate(nil, &tc.u))
			if err := cmd.Validate(); err != nil {
				t.Fatalf("invalid BSON: %v", err)
			}
			if first, _ := cmd.IndexErr(0); first.Key() != UpdateCommand {
				t.Fatalf("first field %q, want the command's name", first.Key())
			}
			got, err := ParseShardUpdate(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if !sameUpdate(got, tc.u) {
				t.Errorf("round trip of %+v: %+v", tc.u, got)
			}
			withPrio := bsoncore.Document(withPriorityField(cmd))
			if again, err := ParseShardUpdate(withPrio); err != nil || !sameUpdate(again, tc.u) {
				t.Errorf("with a priority: %+v, %v", again, err)
			}
		})
	}
	const head = `"_cleaveShardUpdate": "c", "collId": {"$numberLong": "1"}, "rev": {"$numberLong": "1"}, "shard": 0, `
	for _, tc := range []struct{ name, doc string }{
		{"NoRange", `{` + head + `"q": {}, "u": {}, "stmt": 0, "sync": true, "$db": "d"}`},
		{"NoU", `{` + head + `"lo": {"$numberLong": "0"}, "hi": {"$numberLong": "5"}, "q": {}, "stmt": 0, "sync": true, "$db": "d"}`},
		{"NoDB", `{` + head + `"lo": {"$numberLong": "0"}, "hi": {"$numberLong": "5"}, "q": {}, "u": {}, "stmt": 0, "sync": true}`},
		{"Int32Lo", `{` + head + `"lo": 0, "hi": {"$numberLong": "5"}, "q": {}, "u": {}, "stmt": 0, "sync": true, "$db": "d"}`},
		{"PipelineU", `{` + head + `"lo": {"$numberLong": "0"}, "hi": {"$numberLong": "5"}, "q": {}, "u": [], "stmt": 0, "sync": true, "$db": "d"}`},
		{"TxnWithoutLsid", `{` + head + `"lo": {"$numberLong": "0"}, "hi": {"$numberLong": "5"}, "q": {}, "u": {}, "stmt": 0, "sync": true, "txnNumber": {"$numberLong": "1"}, "$db": "d"}`},
		{"Int32TxnNumber", `{` + head + `"lo": {"$numberLong": "0"}, "hi": {"$numberLong": "5"}, "q": {}, "u": {}, "stmt": 0, "sync": true, "lsid": {}, "txnNumber": 1, "$db": "d"}`},
	} {
		_, err := ParseShardUpdate(streamtest.ExtDoc(t, tc.doc))
		if me := mongoerr.As(err); me == nil || me.Code != mongoerr.BadValue {
			t.Errorf("%s: %v, want BadValue", tc.name, err)
		}
	}
}

// sameUpdate reports whether a and b are the same compact update.
func sameUpdate(a, b ShardUpdate) bool {
	return a.DB == b.DB && a.Coll == b.Coll && a.CollID == b.CollID && a.Rev == b.Rev && a.Shard == b.Shard &&
		a.Lo == b.Lo && a.Hi == b.Hi && bytes.Equal(a.Q, b.Q) && bytes.Equal(a.U, b.U) && a.Stmt == b.Stmt &&
		a.Sync == b.Sync && bytes.Equal(a.LSID, b.LSID) && a.TxnNumber == b.TxnNumber
}

// withPriorityField is cmd with the priority argument a router adds at low priority.
func withPriorityField(cmd bsoncore.Document) []byte {
	out := append([]byte(nil), cmd[:len(cmd)-1]...)
	out = bsoncore.AppendStringElement(out, "priorityLevel", "low")
	out = append(out, 0)
	bsoncore.UpdateLength(out, 0, int32(len(out)))
	return out
}
