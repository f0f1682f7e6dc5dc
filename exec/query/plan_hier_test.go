package query_test

import (
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// hierColl creates db.h sharded on {t: "hashed", u: "hashed"} over two shards, with tenant
// 1's span [lo, lo+2^32) cut into three partitions (ids 2, 3, 4) and a_1 indexed, holding
// tenants 0..3 with users 0..9 each.
func hierColl(t *testing.T) (*collFixture, uint64) {
	t.Helper()
	lo, _ := shard.PrefixSpan([]uint64{bsonx.Hash(bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)})}, 2)
	if lo == 0 {
		t.Skip("tenant 1's span starts the hash space")
	}
	parts := []store.Partition{{ID: 1, Lo: 0, Shard: 0}, {ID: 2, Lo: lo, Shard: 1}, {ID: 3, Lo: lo + 1<<30, Shard: 0},
		{ID: 4, Lo: lo + 1<<31, Shard: 1}, {ID: 5, Lo: lo + 1<<32, Shard: 0}}
	spec := store.Collection{DB: "db", Name: "h", ShardKey: streamtest.ExtDoc(t, `{"t": "hashed", "u": "hashed"}`), Partitions: parts,
		Indexes: []store.Index{{Name: "a_1", Key: streamtest.ExtDoc(t, `{"a": 1}`), Ready: true}}}
	var docs []string
	for i := range 40 {
		docs = append(docs, fmt.Sprintf(`{"_id": %d, "t": %d, "u": %d, "a": %d}`, i, i/10, i%10, i%3))
	}
	return createColl(t, fixture.Stores(t, 2), spec, docs), lo
}

func TestFindHierarchicalTargets(t *testing.T) {
	f, lo := hierColl(t)
	for _, tc := range []struct {
		name, filter string
		ids          []int32  // the _ids found
		parts        []uint64 // the partitions read
		spans        bool     // reads within spans of a prefix
	}{
		{"Prefix", `{"t": 1}`, ids(10, 20), []uint64{2, 3, 4}, true},
		{"PrefixIn", `{"t": {"$in": [1, 2]}}`, ids(10, 30), nil, true},
		{"PrefixAndIndex", `{"t": 1, "a": 0}`, []int32{12, 15, 18}, []uint64{2, 3, 4}, true},
		{"FullKey", `{"t": 1, "u": 3}`, []int32{13}, nil, false},
		{"SecondLevelOnly", `{"u": 3}`, []int32{3, 13, 23, 33}, []uint64{1, 2, 3, 4, 5}, false},
		{"NoValue", `{"t": {"$in": []}}`, nil, []uint64{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, _, shards := f.open(t, tc.filter, "", 0)
			var got []int32
			for _, d := range docs {
				got = append(got, d.Lookup("_id").Int32())
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.ids) {
				t.Fatalf("found %v, want %v", got, tc.ids)
			}
			var read []uint64
			for _, s := range shards {
				for _, pr := range s.PartitionsRead() {
					read = append(read, pr.ID)
					if tc.spans != (pr.Spans != nil) {
						t.Fatalf("partition %d: spans %v", pr.ID, pr.Spans)
					}
					for _, sp := range pr.Spans {
						if sp[0] < pr.Lo || sp[0] < lo && tc.name == "Prefix" {
							t.Fatalf("partition %d [%#x, %#x) reads span %#x", pr.ID, pr.Lo, pr.Hi, sp)
						}
					}
				}
			}
			slices.Sort(read)
			if tc.parts != nil && !slices.Equal(read, tc.parts) && (len(read) != 0 || len(tc.parts) != 0) {
				t.Fatalf("read partitions %v, want %v", read, tc.parts)
			}
			if tc.name == "FullKey" && len(read) != 1 {
				t.Fatalf("the full key read %d partitions", len(read))
			}
		})
	}
}

func TestShardHashHierarchical(t *testing.T) {
	f, _ := hierColl(t)
	doc := streamtest.ExtDoc(t, `{"_id": 1, "t": "acme", "u": {"$numberLong": "7"}}`)
	h, err := f.ci.ShardHash(doc)
	if err != nil {
		t.Fatal(err)
	}
	str := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "acme")}
	seven := bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, 7)} // 7.0 and NumberLong(7) hash alike
	if want := shard.ComposeHash([]uint64{bsonx.Hash(str), bsonx.Hash(seven)}); h != want {
		t.Fatalf("ShardHash = %#x, want %#x", h, want)
	}
	missing, err := f.ci.ShardHash(streamtest.ExtDoc(t, `{"_id": 1, "t": "acme"}`))
	null := bsoncore.Value{Type: bsoncore.TypeNull}
	if err != nil || missing != shard.ComposeHash([]uint64{bsonx.Hash(str), bsonx.Hash(null)}) {
		t.Fatalf("a missing level hashes as null: %#x %v", missing, err)
	}
	if _, err := f.ci.ShardHash(streamtest.ExtDoc(t, `{"_id": 1, "t": "acme", "u": [1, 2]}`)); err == nil {
		t.Fatal("an array at level 2 was accepted")
	}
}

// ids returns the int32s in [lo, hi).
func ids(lo, hi int32) []int32 {
	var out []int32
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}
