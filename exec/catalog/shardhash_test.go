package catalog_test

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/update"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// compileColl compiles a catalog record of db.c with shard key key ("" for unsharded),
// stored options opts ("" for none) and partitions parts (nil: one on shard 0).
func compileColl(t *testing.T, key, opts string, parts []store.Partition) (*catalog.Coll, error) {
	t.Helper()
	c := &store.Collection{ID: 1, DB: "db", Name: "c", Partitions: parts,
		Indexes: []store.Index{{ID: store.IDIndexID, Name: store.IDIndexName, Key: ext(t, `{"_id": 1}`), Ready: true}}}
	if parts == nil {
		c.Partitions = []store.Partition{{ID: 1}}
	}
	if key != "" {
		c.ShardKey = ext(t, key)
	}
	if opts != "" {
		c.Options = ext(t, opts)
	}
	return catalog.Compile(c)
}

// mustColl is compileColl that fails the test on an error.
func mustColl(t *testing.T, key, opts string, parts []store.Partition) *catalog.Coll {
	t.Helper()
	ci, err := compileColl(t, key, opts, parts)
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

// TestShardHash checks the hash that places a document: that of the hashed shard-key
// field, equal for equal numbers of every type, null for a missing or undefined field,
// and arrays refused with ShardKeyNotFound 61.
func TestShardHash(t *testing.T) {
	ci := mustColl(t, `{"k": "hashed"}`, "", nil)
	nested := mustColl(t, `{"a.b": "hashed"}`, "", nil)
	hashOf := func(ext string) uint64 { return bsonx.Hash(val(t, ext)) }
	arrays := "Shard key cannot contain array values or array descendants."
	for _, tc := range []struct {
		name string
		coll *catalog.Coll
		doc  string
		want uint64
		msg  string
	}{
		{"Int32", ci, `{"_id": 1, "k": 1}`, hashOf(`1`), ""},
		{"Double", ci, `{"_id": 1, "k": 1.0}`, hashOf(`1`), ""},
		{"Long", ci, `{"_id": 1, "k": {"$numberLong": "1"}}`, hashOf(`1`), ""},
		{"Decimal", ci, `{"_id": 1, "k": {"$numberDecimal": "1.00"}}`, hashOf(`1`), ""},
		{"String", ci, `{"_id": 1, "k": "1"}`, hashOf(`"1"`), ""},
		{"Missing", ci, `{"_id": 1}`, hashOf(`null`), ""},
		{"Null", ci, `{"_id": 1, "k": null}`, hashOf(`null`), ""},
		{"Undefined", ci, `{"_id": 1, "k": {"$undefined": true}}`, hashOf(`null`), ""},
		{"Document", ci, `{"_id": 1, "k": {"x": 1}}`, hashOf(`{"x": 1}`), ""},
		{"Array", ci, `{"_id": 1, "k": [1]}`, 0, arrays},
		{"EmptyArray", ci, `{"_id": 1, "k": []}`, 0, arrays},
		{"NestedValue", nested, `{"a": {"b": 2}}`, hashOf(`2`), ""},
		{"NestedArrayLeaf", nested, `{"a": {"b": [2]}}`, 0, arrays},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := tc.coll.ShardHash(ext(t, tc.doc))
			if tc.msg != "" {
				wantCode(t, err, mongoerr.ShardKeyNotFound, "ShardKeyNotFound", tc.msg)
				return
			}
			wantCode(t, err, 0, "", "")
			if h != tc.want {
				t.Errorf("hash %#x, want %#x", h, tc.want)
			}
		})
	}
	if h1, h2 := hashOf(`1`), hashOf(`2`); h1 == h2 {
		t.Error("1 and 2 hash equal")
	}
}

// TestShardHashArrayOnPath checks that an array along the shard-key path (not at its end)
// is refused too, as MongoDB refuses "array descendants" (its extraction, getFieldDottedOrArray,
// stops at the first array on the path), with or without _id, at any depth; a scalar on the
// path is a missing field (null), and arrays inside a document value are the value's own.
func TestShardHashArrayOnPath(t *testing.T) {
	ci := mustColl(t, `{"a.b": "hashed"}`, "", nil)
	_, err := ci.ShardHash(ext(t, `{"a": [{"b": 1}]}`))
	wantCode(t, err, mongoerr.ShardKeyNotFound, "ShardKeyNotFound", "Shard key cannot contain array values or array descendants.")

	deep := mustColl(t, `{"a.b.c": "hashed"}`, "", nil)
	nestedID := mustColl(t, `{"_id.x": "hashed"}`, "", nil)
	hashOf := func(ext string) uint64 { return bsonx.Hash(val(t, ext)) }
	for _, tc := range []struct {
		name string
		coll *catalog.Coll
		doc  string
		want uint64 // when not refused
		ok   bool
	}{
		{"WithID", ci, `{"_id": 1, "a": [{"b": 1}]}`, 0, false},
		{"ArrayOfScalars", ci, `{"a": [1, 2]}`, 0, false},
		{"EmptyArray", ci, `{"a": []}`, 0, false},
		{"ElementsWithoutField", ci, `{"a": [{"c": 1}]}`, 0, false},
		{"DeepFirst", deep, `{"a": [{"b": {"c": 1}}]}`, 0, false},
		{"DeepMiddle", deep, `{"_id": 1, "a": {"b": [{"c": 1}]}}`, 0, false},
		{"DeepLeaf", deep, `{"a": {"b": {"c": [1]}}}`, 0, false},
		{"NestedID", nestedID, `{"_id": {"x": [1]}}`, 0, false},
		{"IDArray", nestedID, `{"_id": [{"x": 1}]}`, 0, false},
		{"NestedIDValue", nestedID, `{"_id": {"x": 1, "y": [2]}}`, hashOf(`1`), true},
		{"ScalarOnPath", ci, `{"a": 1}`, hashOf(`null`), true},
		{"NullOnPath", deep, `{"a": {"b": null}}`, hashOf(`null`), true},
		{"ArrayInValue", ci, `{"a": {"b": {"c": [1]}}}`, hashOf(`{"c": [1]}`), true},
		{"ArrayBeside", deep, `{"a": {"b": {"c": 2}, "d": [1]}, "e": [2]}`, hashOf(`2`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := tc.coll.ShardHash(ext(t, tc.doc))
			if !tc.ok {
				wantCode(t, err, mongoerr.ShardKeyNotFound, "ShardKeyNotFound", "Shard key cannot contain array values or array descendants.")
				return
			}
			wantCode(t, err, 0, "", "")
			if h != tc.want {
				t.Errorf("hash %#x, want %#x", h, tc.want)
			}
		})
	}
}

// TestShardHashCompoundKey checks a compound shard key: its hashed field places the
// document, and an array in any of its fields, or on a field's path, is refused as mongos
// refuses it (it extracts the whole key).
func TestShardHashCompoundKey(t *testing.T) {
	ci := mustColl(t, `{"a": 1, "k": "hashed", "c.d": 1}`, "", nil)
	hashOf := func(ext string) uint64 { return bsonx.Hash(val(t, ext)) }
	for _, tc := range []struct {
		name, doc string
		want      uint64
		ok        bool
	}{
		{"WithIDArrayInRanged", `{"_id": 1, "a": [1], "k": 5, "c": {"d": 1}}`, 0, false},
		{"ArrayInRangedField", `{"a": [1], "k": 5}`, 0, false},
		{"ArrayOnRangedPath", `{"a": 1, "k": 5, "c": [{"d": 1}]}`, 0, false},
		{"ArrayAtRangedLeaf", `{"a": 1, "k": 5, "c": {"d": []}}`, 0, false},
		{"ArrayInHashedField", `{"a": 1, "k": [5]}`, 0, false},
		{"AllScalars", `{"a": 1, "k": 5, "c": {"d": 1}}`, hashOf(`5`), true},
		{"RangedMissing", `{"k": 5}`, hashOf(`5`), true},
		{"ArrayElsewhere", `{"a": {"x": [1]}, "k": 5, "c": {"e": [1]}, "z": [1]}`, hashOf(`5`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ci.ShardHash(ext(t, tc.doc))
			if !tc.ok {
				wantCode(t, err, mongoerr.ShardKeyNotFound, "ShardKeyNotFound", "Shard key cannot contain array values or array descendants.")
				return
			}
			wantCode(t, err, 0, "", "")
			if h != tc.want {
				t.Errorf("hash %#x, want %#x", h, tc.want)
			}
		})
	}
}

// TestShardHashAfterUpdate checks the hash of an updated document, as the write path takes
// it (write.Op's compute applies the update, then ShardHash of the result): an update that
// puts an array on the shard-key path, or at its end, is refused; one that changes the key
// to a scalar moves the document to that value's hash. (MongoDB's update stage refuses
// such an update with NotSingleValueField 67, "After applying the update to the document,
// the field 'a.b' was found to be an array or array descendant."; the write path reports
// ShardHash's ShardKeyNotFound.)
func TestShardHashAfterUpdate(t *testing.T) {
	ci := mustColl(t, `{"a.b": "hashed"}`, "", nil)
	doc := ext(t, `{"_id": 1, "a": {"b": 1, "c": 2}, "l": [{"b": 3}]}`)
	if h, err := ci.ShardHash(doc); err != nil || h != bsonx.Hash(val(t, `1`)) {
		t.Fatalf("hash of the document before the update %#x (%v)", h, err)
	}
	for _, tc := range []struct {
		name, update string
		want         string // the key value the updated document hashes as; "" when refused
	}{
		{"SetArrayOnPath", `{"$set": {"a": [{"b": 1}]}}`, ""},
		{"SetArrayAtLeaf", `{"$set": {"a.b": [1]}}`, ""},
		{"ReplaceArrayOnPath", `{"_id": 1, "a": [{"b": 1}]}`, ""},
		{"RenameArrayOnPath", `{"$rename": {"l": "a"}}`, ""},
		{"SetEmptyArrayOnPath", `{"$set": {"a": []}}`, ""},
		{"SetScalar", `{"$set": {"a.b": 7}}`, `7`},
		{"SetBeside", `{"$set": {"a.c": [1, 2]}}`, `1`},
		{"SetDocumentHoldingArray", `{"$set": {"a.b": {"x": [1]}}}`, `{"x": [1]}`},
		{"UnsetPath", `{"$unset": {"a": 1}}`, `null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := update.Compile(ext(t, tc.update), nil)
			if err != nil {
				t.Fatal(err)
			}
			out, changed, err := u.Apply(nil, doc, -1, false)
			if err != nil || !changed {
				t.Fatalf("apply: changed %v, %v", changed, err)
			}
			h, err := ci.ShardHash(out)
			if tc.want == "" {
				wantCode(t, err, mongoerr.ShardKeyNotFound, "ShardKeyNotFound", "Shard key cannot contain array values or array descendants.")
				return
			}
			wantCode(t, err, 0, "", "")
			if h != bsonx.Hash(val(t, tc.want)) {
				t.Errorf("hash %#x, want that of %s", h, tc.want)
			}
		})
	}
}

// TestCompilePlacement checks the placement decisions Compile makes: which collections
// find a document by its _id alone (IDHash), which need _id index entries (IDIndexed).
func TestCompilePlacement(t *testing.T) {
	id := val(t, `7`)
	for _, tc := range []struct {
		name, key, opts string
		hashed          int
		idIndexed       bool
		idHash          uint64
		idHashOK        bool
	}{
		{"Unsharded", "", "", -1, false, 0, true},
		{"HashedID", `{"_id": "hashed"}`, "", 0, false, bsonx.Hash(id), true},
		{"HashedOther", `{"k": "hashed"}`, "", 0, true, 0, false},
		{"CompoundHashed", `{"a": 1, "k": "hashed"}`, "", 1, true, 0, false},
		{"Capped", "", `{"capped": true, "size": 4096}`, -1, true, 0, false},
		{"Clustered", "", `{"clusteredIndex": {"key": {"_id": 1}, "unique": true}}`, -1, true, 0, true},
		{"CollatedID", "", `{"collation": {"locale": "fr"}}`, -1, false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ci := mustColl(t, tc.key, tc.opts, nil)
			if ci.Hashed != tc.hashed || ci.IDIndexed != tc.idIndexed {
				t.Errorf("hashed %d idIndexed %v, want %d %v", ci.Hashed, ci.IDIndexed, tc.hashed, tc.idIndexed)
			}
			if h, ok := ci.IDHash(id); h != tc.idHash || ok != tc.idHashOK {
				t.Errorf("IDHash = %#x, %v; want %#x, %v", h, ok, tc.idHash, tc.idHashOK)
			}
		})
	}
}

// TestPartitionMap checks partition lookups of a compiled collection's map, and the maps
// Compile refuses.
func TestPartitionMap(t *testing.T) {
	parts := []store.Partition{{ID: 1, Lo: 0, Shard: 0}, {ID: 2, Lo: 1 << 62, Shard: 1}, {ID: 3, Lo: 1 << 63, Shard: 0}}
	ci := mustColl(t, `{"k": "hashed"}`, "", parts)
	for _, tc := range []struct {
		name   string
		hash   uint64
		id     uint64
		shard  int
		lo, hi uint64
	}{
		{"Zero", 0, 1, 0, 0, 1 << 62},
		{"BeforeSecond", 1<<62 - 1, 1, 0, 0, 1 << 62},
		{"SecondStart", 1 << 62, 2, 1, 1 << 62, 1 << 63},
		{"Middle", 3 << 61, 2, 1, 1 << 62, 1 << 63},
		{"ThirdStart", 1 << 63, 3, 0, 1 << 63, 0},
		{"Max", ^uint64(0), 3, 0, 1 << 63, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := ci.Map.Locate(tc.hash)
			p := ci.Map.Partition(i)
			lo, hi := ci.Map.Range(i)
			if p.ID != tc.id || p.Shard != tc.shard || lo != tc.lo || hi != tc.hi {
				t.Errorf("hash %#x: partition %d on shard %d [%#x, %#x), want %d on %d [%#x, %#x)",
					tc.hash, p.ID, p.Shard, lo, hi, tc.id, tc.shard, tc.lo, tc.hi)
			}
		})
	}
	if got := ci.Map.Shards(); len(got) != 2 {
		t.Errorf("shards %v, want [0 1]", got)
	}
	for name, bad := range map[string][]store.Partition{
		"NotFromZero":   {{ID: 1, Lo: 5}},
		"NotIncreasing": {{ID: 1}, {ID: 2, Lo: 9}, {ID: 3, Lo: 9}},
		"DuplicateID":   {{ID: 1}, {ID: 1, Lo: 9}},
		"NegativeShard": {{ID: 1, Shard: -1}},
	} {
		if _, err := compileColl(t, "", "", bad); err == nil || !strings.Contains(err.Error(), "collection db.c") {
			t.Errorf("%s: Compile error %v", name, err)
		}
	}
}

// TestShardKeyLabels checks the shard-key pattern and value labels mongos-style reports use.
func TestShardKeyLabels(t *testing.T) {
	ci := mustColl(t, `{"k": "hashed"}`, "", nil)
	if got := ci.ShardKeyPattern(); got != `{ k: "hashed" }` {
		t.Errorf("pattern %s", got)
	}
	label := ci.ShardKeyLabel(nil, ext(t, `{"k": "abc"}`))
	if len(label) == 0 || bsoncore.Type(label[0]) != bsoncore.TypeString {
		t.Errorf("label %x, want a string's", label)
	}
	long := ci.ShardKeyLabel(nil, ext(t, `{"k": "`+strings.Repeat("x", 200)+`"}`))
	if len(long) != 65 {
		t.Errorf("a long value's label has %d bytes, want 65", len(long))
	}
	if un := mustColl(t, "", "", nil); len(un.ShardKeyLabel(nil, ext(t, `{"k": 1}`))) != 0 {
		t.Error("an unsharded collection labels its documents")
	}
	ts := mustColl(t, "", `{"timeseries": {"timeField": "t"}}`, nil)
	if h, err := ts.ShardHash(ext(t, `{"t": 1}`)); err != nil || h>>63 != 1 {
		t.Errorf("a measurement's hash %#x (%v), want the top bit set", h, err)
	}
}
