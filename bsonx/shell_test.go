package bsonx_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

func TestShellString(t *testing.T) {
	oid, _ := bson.ObjectIDFromHex("65a1b2c3d4e5f60718293a4b")
	for _, c := range []struct {
		v    any
		want string
	}{
		{"x", `"x"`},
		{int32(1), "1"},
		{int64(-7), "-7"},
		{1.0, "1.0"},
		{2.5, "2.5"},
		{1e20, "1e+20.0"},
		{bson.Null{}, "null"},
		{true, "true"},
		{oid, "ObjectId('65a1b2c3d4e5f60718293a4b')"},
		{bson.A{}, "[]"},
		{bson.A{int32(1), "a"}, `[ 1, "a" ]`},
		{bson.D{}, "{}"},
		{bson.D{{Key: "_id", Value: 1.0}, {Key: "t", Value: bson.A{"a"}}}, `{ _id: 1.0, t: [ "a" ] }`},
		{`say "hi"`, `"say "hi""`}, // unescaped, as MongoDB prints it
		{bson.NewDecimal128(0x3040000000000000, 150), "150"},
		{bson.DateTime(1380067200000), "new Date(1380067200000)"},
	} {
		typ, data, err := bson.MarshalValue(c.v)
		if err != nil {
			t.Fatal(err)
		}
		got := bsonx.ShellString(bsoncore.Value{Type: bsoncore.Type(typ), Data: data})
		if got != c.want {
			t.Errorf("ShellString(%v) = %s, want %s", c.v, got, c.want)
		}
	}
}
