package query

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/store"
)

// TestFilterExact checks which plans read only documents their filter matches (their shard
// streams then skip the filter, and a count reads no document): ranges, equalities and $in on
// fields of an ordered index that are not multikey, hashed or collated, and nothing else in
// the filter; the fields the ranges do not bound are the key check's.
func TestFilterExact(t *testing.T) {
	cat := fixture.Stores(t, 1)
	idx := func(name, key, spec string) store.Index {
		x := store.Index{Name: name, Key: streamtest.ExtDoc(t, key), Ready: true}
		if spec != "" {
			x.Spec = streamtest.ExtDoc(t, spec)
		}
		return x
	}
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c", Indexes: []store.Index{
		idx("t_1", `{"t": 1}`, ""),
		idx("d_1_t_1", `{"d": 1, "t": 1}`, ""),
		idx("m_1", `{"m": 1}`, ""),
		idx("s_1", `{"s": 1}`, `{"key": {"s": 1}, "name": "s_1", "collation": {"locale": "fr"}}`),
		idx("h_hashed", `{"h": "hashed"}`, ""),
	}})
	ci.Indexes[3].Multikey = []bool{true} // m_1: some document held an array at m
	for _, tc := range []struct {
		filter, hint string
		want         bool
	}{
		{`{"t": {"$gte": 5, "$lt": 10}}`, "", true},
		{`{"t": 7}`, "", true},
		{`{"d": "x"}`, "", true},                                // a compound index's first field
		{`{"d": "x", "t": {"$gte": 5}}`, "", true},              // a prefix, then a range
		{`{"d": {"$gte": "x"}, "t": 5}`, `"d_1_t_1"`, true},     // a range, then the key check
		{`{"d": "x", "z": 1}`, "", false},                       // a field the index does not hold
		{`{"t": {"$gte": 5}, "z": 1}`, "", false},               // a field the index does not bound
		{`{"t": {"$in": [1, 2]}}`, "", true},                    // $in
		{`{"t": {"$in": [1, null]}}`, "", false},                // null is missing too
		{`{"m": {"$gt": 1, "$lt": 3}}`, "", false},              // multikey
		{`{"s": {"$gt": 1}}`, `"s_1"`, false},                   // collated
		{`{"h": 5}`, "", false},                                 // hashed
		{`{"t": {"$gte": 5}}`, `{"$natural": 1}`, false},        // not an index plan
		{`{"d": {"$gte": "x"}}`, `"t_1"`, false},                // hinted elsewhere: a full scan of t_1
		{`{"t": {"$gte": 5}}`, `"d_1_t_1"`, true},               // all of d, t by the key check
		{`{"t": {"$gt": {"$numberDouble": "NaN"}}}`, "", false}, // NaN
	} {
		f, err := CompileFilter(streamtest.ExtDoc(t, tc.filter))
		if err != nil {
			t.Fatal(err)
		}
		var hint bsoncore.Value
		if tc.hint != "" {
			hint = streamtest.ExtDoc(t, `{"h": `+tc.hint+`}`).Lookup("h")
		}
		p, err := planQueryInto(new(Plan), ci, f, nil, hint)
		if err != nil {
			t.Fatalf("%s: %v", tc.filter, err)
		}
		if got := filterExact(ci, p, f); got != tc.want {
			t.Errorf("%s (hint %s): filterExact = %v on a plan of kind %v, want %v", tc.filter, tc.hint, got, p.Kind, tc.want)
		}
	}
}
