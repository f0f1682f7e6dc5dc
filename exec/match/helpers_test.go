package match

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// doc parses relaxed Extended JSON (field order kept; 1 is int32, 1.0 a double,
// {"$numberLong": "1"} an int64) into BSON bytes.
func doc(tb testing.TB, s string) bsoncore.Document {
	tb.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		tb.Fatalf("bad extended JSON %s: %v", s, err)
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		tb.Fatalf("marshal %s: %v", s, err)
	}
	return raw
}

// val parses the Extended JSON of one value: {"v": <s>}.
func val(tb testing.TB, s string) bsoncore.Value {
	tb.Helper()
	return doc(tb, `{"v": `+s+`}`).Lookup("v")
}
