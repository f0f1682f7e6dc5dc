package bsonx_test

import (
	"fmt"

	"github.com/cleavedb/cleave/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A store key made of a shard-key value and a descending component, split and decoded again.
func Example() {
	doc := bsoncore.NewDocumentBuilder().AppendString("deviceId", "d-17").AppendInt32("n", 3).Build()
	v, _ := bsonx.Lookup(doc, "deviceId")
	key := bsonx.AppendKey(nil, v)
	n, _ := bsonx.Lookup(doc, "n")
	key = bsonx.AppendKeyDesc(key, n)

	first, _ := bsonx.KeyLen(key)
	a, rest, _ := bsonx.DecodeKey(key)
	b, _, _ := bsonx.DecodeKeyDesc(rest)
	fmt.Println(first, a, b)
	fmt.Println(bsonx.Hash(v) == bsonx.HashKey(key[:first]))
	// Output:
	// 7 "d-17" {"$numberInt":"3"}
	// true
}

// Numbers of every type compare, encode and hash by value.
func ExampleCompare() {
	one := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}
	oneDouble := bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, 1.0)}
	fmt.Println(bsonx.Compare(one, oneDouble), bsonx.Hash(one) == bsonx.Hash(oneDouble))
	// Output: 0 true
}

// WalkPath fans a dotted path out over arrays as the query matcher does.
func ExampleWalkPath() {
	arr := bsoncore.NewArrayBuilder().
		AppendDocument(bsoncore.NewDocumentBuilder().AppendInt32("b", 1).Build()).
		AppendDocument(bsoncore.NewDocumentBuilder().AppendInt32("c", 2).Build()).
		Build()
	doc := bsoncore.NewDocumentBuilder().AppendArray("a", arr).Build()
	bsonx.WalkPath(doc, "a.b", func(m bsonx.PathMatch) bool {
		if m.Missing {
			fmt.Println("missing in element", m.ArrayIndex)
		} else {
			fmt.Println(m.Value, "in element", m.ArrayIndex)
		}
		return true
	})
	// Output:
	// {"$numberInt":"1"} in element 0
	// missing in element 1
}
