package bsonx

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestTypeName checks MongoDB's names for a few types and the "missing" pseudo-type.
func TestTypeName(t *testing.T) {
	for typ, want := range map[bsoncore.Type]string{
		0: "missing", bsoncore.TypeInt32: "int", bsoncore.TypeInt64: "long",
		bsoncore.TypeEmbeddedDocument: "object", bsoncore.TypeCodeWithScope: "javascriptWithScope",
		bsoncore.TypeMaxKey: "maxKey", 0x42: "invalid type 66",
	} {
		if got := TypeName(typ); got != want {
			t.Errorf("TypeName(%#x) = %q, want %q", byte(typ), got, want)
		}
	}
}
