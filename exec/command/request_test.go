package command

import (
	"testing"

	"github.com/cleavedb/cleave/bsonx"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestGenericArgsAsLookup checks that the one-pass scan of a body's generic arguments finds
// what body.Lookup finds, field by field: the first of repeated fields, absent ones, and
// the nested lookups (lsid.id, $clusterTime.clusterTime, readConcern.afterClusterTime)
// through documents, arrays and scalars.
func TestGenericArgsAsLookup(t *testing.T) {
	names := map[int]string{
		GenDB: "$db", GenLSID: "lsid", GenClusterTime: "$clusterTime", GenReadConcern: "readConcern",
		GenTxnNumber: "txnNumber", GenAutocommit: "autocommit", GenStartTxn: "startTransaction",
		GenSingleBatch: "singleBatch",
	}
	bodies := []bson.D{
		{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{}}, {Key: "$db", Value: "test"}},
		{{Key: "ping", Value: 1}},
		{{Key: "find", Value: "c"}, {Key: "singleBatch", Value: true}, {Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}},
			{Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: bson.Timestamp{T: 5, I: 1}}}},
			{Key: "readConcern", Value: bson.D{{Key: "afterClusterTime", Value: bson.Timestamp{T: 4}}}},
			{Key: "txnNumber", Value: int64(3)}, {Key: "autocommit", Value: false}, {Key: "startTransaction", Value: true},
			{Key: "$db", Value: "a"}, {Key: "$db", Value: "b"}, {Key: "txnNumber", Value: int64(9)}},
		{{Key: "insert", Value: "c"}, {Key: "lsid", Value: bson.A{"x"}}, {Key: "readConcern", Value: "local"},
			{Key: "$clusterTime", Value: 7}, {Key: "apiStrict", Value: true}, {Key: "$db", Value: 1}},
	}
	for i, d := range bodies {
		body, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		r := &Request{Body: body}
		for f, name := range names {
			got, want := r.Generic(f), bsoncore.Document(body).Lookup(name)
			if got.Type != want.Type || string(got.Data) != string(want.Data) {
				t.Errorf("body %d, %s: scan %v, Lookup %v", i, name, got, want)
			}
		}
		nested := []struct {
			f         int
			outer, in string
		}{{GenLSID, "lsid", "id"}, {GenClusterTime, "$clusterTime", "clusterTime"}, {GenReadConcern, "readConcern", "afterClusterTime"}}
		for _, n := range nested {
			got := bsonx.SubField(r.Generic(n.f), n.in)
			want, _ := bsoncore.Document(body).LookupErr(n.outer, n.in)
			if got.Type != want.Type || string(got.Data) != string(want.Data) {
				t.Errorf("body %d, %s.%s: scan %v, Lookup %v", i, n.outer, n.in, got, want)
			}
		}
		_, hasStrict := bsoncore.Document(body).LookupErr("apiStrict")
		if r.HasAPIParams() != (hasStrict == nil) {
			t.Errorf("body %d: hasAPIParams %v", i, r.HasAPIParams())
		}
	}
}
