package query_test

import (
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/store"
)

// cwiDoc is document i of cwiColl: t = i%3; an even i has attrs {a: i%5, b: "s<i%4>"}, an
// odd one not a multiple of 5 attrs {c: i}, the others no attrs.
func cwiDoc(i int) string {
	switch {
	case i%2 == 0:
		return fmt.Sprintf(`{"_id": %d, "k": %d, "t": %d, "attrs": {"a": %d, "b": "s%d"}}`, i, i, i%3, i%5, i%4)
	case i%5 != 0:
		return fmt.Sprintf(`{"_id": %d, "k": %d, "t": %d, "attrs": {"c": %d}}`, i, i, i%3, i)
	}
	return fmt.Sprintf(`{"_id": %d, "k": %d, "t": %d, "x": 1}`, i, i, i%3)
}

// cwiEntries is how many entries document i has in {t: 1, "attrs.$**": 1}: one per covered
// leaf, one (MinKey) without any.
func cwiEntries(i int) int64 {
	if i%2 == 0 {
		return 2
	}
	return 1
}

// cwiColl creates db.w sharded on hashed k over four partitions on two shards, with the
// compound wildcard indexes t_1_attrs.$**_1 and attrs.$**_-1_k_-1, holding cwiDoc(0..59).
func cwiColl(t *testing.T) *collFixture {
	t.Helper()
	spec := store.Collection{DB: "db", Name: "w", ShardKey: streamtest.ExtDoc(t, `{"k": "hashed"}`), Indexes: []store.Index{
		{Name: "t_1_attrs.$**_1", Key: streamtest.ExtDoc(t, `{"t": 1, "attrs.$**": 1}`), Ready: true},
		{Name: "attrs.$**_-1_k_-1", Key: streamtest.ExtDoc(t, `{"attrs.$**": -1, "k": -1}`), Ready: true},
	}}
	for i := range 4 {
		spec.Partitions = append(spec.Partitions, store.Partition{ID: uint64(i + 1), Lo: uint64(i) * (1 << 62), Shard: i % 2})
	}
	var docs []string
	for i := range 60 {
		docs = append(docs, cwiDoc(i))
	}
	return createColl(t, fixture.Stores(t, 2), spec, docs)
}

// TestFindCompoundWildcard: queries on the regular prefix, with or without a path the
// wildcard covers, read the compound wildcard index; they find what a collection scan finds,
// and examine exactly the entries their bounds hold.
func TestFindCompoundWildcard(t *testing.T) {
	f := cwiColl(t)
	for _, tc := range []struct {
		name, index, filter, sort string           // index: "" for t_1_attrs.$**_1
		match                     func(i int) bool // the documents the filter selects
		keys                      func(i int) int64
		keyPattern                string
		sorted                    bool
	}{
		{"PrefixAndPath", "", `{"t": 1, "attrs.a": 2}`, "", func(i int) bool { return i%3 == 1 && i%2 == 0 && i%5 == 2 },
			func(int) int64 { return 1 }, `{"t": 1, "$_path": 1, "attrs.a": 1}`, false},
		{"PrefixAndPathRange", "", `{"t": 0, "attrs.c": {"$gt": 20}}`, "", func(i int) bool { return i%3 == 0 && i%2 == 1 && i%5 != 0 && i > 20 },
			func(int) int64 { return 1 }, `{"t": 1, "$_path": 1, "attrs.c": 1}`, false},
		{"PrefixInAndPath", "", `{"t": {"$in": [0, 2]}, "attrs.b": "s2"}`, "", func(i int) bool { return i%3 != 1 && i%2 == 0 && i%4 == 2 },
			func(int) int64 { return 1 }, `{"t": 1, "$_path": 1, "attrs.b": 1}`, false},
		{"PrefixOnly", "", `{"t": 2}`, "", func(i int) bool { return i%3 == 2 }, cwiEntries, `{"t": 1, "$_path": 1}`, false},
		{"PrefixOnlyOtherField", "", `{"t": 2, "x": 1}`, "", func(i int) bool { return i%3 == 2 && i%2 == 1 && i%5 == 0 },
			nil, `{"t": 1, "$_path": 1}`, false},
		{"PrefixSorted", "", `{"t": {"$in": [1, 2]}}`, `{"t": -1}`, func(i int) bool { return i%3 != 0 }, cwiEntries, `{"t": 1, "$_path": 1}`, true},
		{"PathThenSuffixRange", "attrs.$**_-1_k_-1", `{"attrs.a": {"$in": [1, 3]}, "k": {"$gte": 20}}`, "",
			func(i int) bool { return i%2 == 0 && (i%5 == 1 || i%5 == 3) && i >= 20 },
			func(int) int64 { return 1 }, `{"$_path": 1, "attrs.a": -1, "k": -1}`, false},
		{"PathRangeSuffixFiltered", "attrs.$**_-1_k_-1", `{"attrs.c": {"$lt": 30}, "k": {"$gte": 20}}`, "",
			func(i int) bool { return i%2 == 1 && i%5 != 0 && i >= 20 && i < 30 }, nil, `{"$_path": 1, "attrs.c": -1, "k": -1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, p, shards := f.open(t, tc.filter, tc.sort, 0)
			index := tc.index
			if index == "" {
				index = "t_1_attrs.$**_1"
			}
			if p.Kind != query.PlanIndex || p.Index.Meta.Name != index {
				t.Fatalf("plan %v on %v, want %s", p.Kind, p.Index, index)
			}
			kp := bsoncore.Element(p.AppendWildcardKeyPattern(nil, "k")).Value().Document()
			if want := streamtest.ExtDoc(t, tc.keyPattern); !slices.Equal(kp, want) {
				t.Errorf("keyPattern %s, want %s", kp, want)
			}
			var got, want []int32
			var keys int64
			for _, d := range docs {
				got = append(got, d.Lookup("_id").Int32())
			}
			for i := range 60 {
				if tc.match(i) {
					want = append(want, int32(i))
				}
				if tc.keys != nil && tc.match(i) {
					keys += tc.keys(i)
				}
			}
			if tc.sorted {
				if !p.Sorted || !slices.IsSortedFunc(docs, func(a, b bsoncore.Document) int {
					return bsonx.Compare(b.Lookup("t"), a.Lookup("t"))
				}) {
					t.Errorf("not sorted by t descending (Sorted %v)", p.Sorted)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("found %v, want %v", got, want)
			}
			var examined int64
			for _, s := range shards {
				examined += s.Stats.KeysExamined
			}
			if tc.keys != nil && examined != keys {
				t.Errorf("keysExamined %d, want %d", examined, keys)
			}
		})
	}
}
