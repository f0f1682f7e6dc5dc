package query_test

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// collFixture is a collection on real stores with the engine that reads it.
type collFixture struct {
	cat *catalog.Catalog
	ci  *catalog.Coll
	g   *query.Engine
}

// newColl creates db.c on n shards (sharded on hashed k over parts partitions when parts
// > 0) with indexes a_1, b_1_c_1 and the hidden h_1, and inserts docs.
func newColl(t testing.TB, shards, parts int, docs []string) *collFixture {
	t.Helper()
	cat := fixture.Stores(t, shards)
	spec := store.Collection{DB: "db", Name: "c", Indexes: []store.Index{
		{Name: "a_1", Key: streamtest.ExtDoc(t, `{"a": 1}`), Ready: true},
		{Name: "b_1_c_1", Key: streamtest.ExtDoc(t, `{"b": 1, "c": 1}`), Ready: true},
		{Name: "h_1", Key: streamtest.ExtDoc(t, `{"h": 1}`), Spec: streamtest.ExtDoc(t, `{"key": {"h": 1}, "name": "h_1", "hidden": true}`), Ready: true},
	}}
	if parts > 0 {
		spec.ShardKey = streamtest.ExtDoc(t, `{"k": "hashed"}`)
		for i := range parts {
			spec.Partitions = append(spec.Partitions, store.Partition{ID: uint64(i + 1), Lo: uint64(i) * (^uint64(0)/uint64(parts) + 1), Shard: i % shards})
		}
	}
	return createColl(t, cat, spec, docs)
}

// createColl creates spec's collection in cat and inserts docs (Extended JSON) into it.
func createColl(t testing.TB, cat *catalog.Catalog, spec store.Collection, docs []string) *collFixture {
	t.Helper()
	ci := fixture.Create(t, cat, spec)
	g := query.New(cat, query.Options{})
	if len(docs) > 0 {
		vals := make([]bsoncore.Value, len(docs))
		for i, d := range docs {
			vals[i] = bsonx.DocValue(streamtest.ExtDoc(t, d))
		}
		var res write.Results
		if _, err := write.NewPath(cat, g, nil).Insert(context.Background(), ci, vals, 0, true, false, write.Concern{}, &res, nil); err != nil || len(res.Errs) > 0 {
			t.Fatalf("insert: %v %v", err, res.Errs)
		}
	}
	return &collFixture{cat: cat, ci: ci, g: g}
}

// open plans and opens filter (and sort, Extended JSON; "" for none) on the collection.
func (f *collFixture) open(t *testing.T, filter, sort string, limit int64) ([]bsoncore.Document, *query.Plan, []*query.ShardStream) {
	t.Helper()
	flt, err := query.CompileFilter(streamtest.ExtDoc(t, filter))
	if err != nil {
		t.Fatal(err)
	}
	q := &query.Query{CI: f.ci, Filter: flt, Limit: limit}
	if sort != "" {
		if q.Sort, err = query.ParseSort(streamtest.ExtDoc(t, sort)); err != nil {
			t.Fatal(err)
		}
	}
	s, p, shards, err := f.g.Open(q)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := streamtest.Drain(t, s)
	if err != nil {
		t.Fatal(err)
	}
	return docs, p, shards
}

// docsOf returns n documents {_id: i, k: i%10, a: i%10, b: i%3, c: i}.
func docsOf(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"_id": %d, "k": %d, "a": %d, "b": %d, "c": %d, "h": %d}`, i, i%10, i%10, i%3, i, i)
	}
	return out
}

func TestPlanAccessPaths(t *testing.T) {
	f := newColl(t, 1, 0, nil)
	for _, tc := range []struct {
		filter, sort string
		kind         query.Kind
		index        string // "" for none
		sorted       bool
	}{
		{filter: `{"_id": 5}`, kind: query.PlanIDs},
		{filter: `{"_id": {"$in": [1, 2]}}`, kind: query.PlanIDs},
		{filter: `{"a": 3}`, kind: query.PlanIndex, index: "a_1"},
		{filter: `{"a": {"$gt": 3}}`, kind: query.PlanIndex, index: "a_1"},
		{filter: `{"b": 1, "c": {"$lt": 9}}`, kind: query.PlanIndex, index: "b_1_c_1"},
		{filter: `{"b": 1}`, sort: `{"c": 1}`, kind: query.PlanIndex, index: "b_1_c_1", sorted: true},
		{filter: `{"c": 1}`, kind: query.PlanScan},                          // c is not an index prefix
		{filter: `{"h": 1}`, kind: query.PlanScan},                          // hidden indexes are not planned
		{filter: `{"a": {"$in": []}}`, kind: query.PlanIndex, index: "a_1"}, // no ranges: reads nothing
		{filter: `{}`, sort: `{"a": 1}`, kind: query.PlanIndex, index: "a_1", sorted: true},
	} {
		_, p, _ := f.open(t, tc.filter, tc.sort, 0)
		name := ""
		if p.Index != nil {
			name = p.Index.Meta.Name
		}
		if p.Kind != tc.kind || name != tc.index || (tc.sorted && !p.Sorted) {
			t.Errorf("%s sort %s: plan kind %d index %q sorted %v, want %d %q %v", tc.filter, tc.sort, p.Kind, name, p.Sorted, tc.kind, tc.index, tc.sorted)
		}
	}
}

// TestOpenExamines checks what each access path reads, not only what it returns.
func TestOpenExamines(t *testing.T) {
	f := newColl(t, 1, 0, docsOf(100))
	for _, tc := range []struct {
		filter     string
		n          int
		keys, docs int64
	}{
		{`{"_id": 5}`, 1, 0, 1},
		{`{"a": 3}`, 10, 10, 10},
		{`{"a": {"$in": [1, 2]}}`, 20, 20, 20},
		{`{"b": 1, "c": {"$lt": 10}}`, 3, 3, 3},
		{`{"c": {"$lt": 10}}`, 10, 0, 100},
		{`{"a": {"$in": []}}`, 0, 0, 0},
	} {
		docs, _, shards := f.open(t, tc.filter, "", 0)
		var keys, examined int64
		for _, s := range shards {
			keys += s.Stats.KeysExamined
			examined += s.Stats.DocsExamined
		}
		if len(docs) != tc.n || keys != tc.keys || examined != tc.docs {
			t.Errorf("%s: %d documents, %d keys and %d documents examined; want %d, %d, %d",
				tc.filter, len(docs), keys, examined, tc.n, tc.keys, tc.docs)
		}
	}
}

// TestOpenShardedMerge reads a collection spread over two shards: a targeted read touches
// one shard, an index-sorted read merges both in order, a limit stops each shard early.
func TestOpenShardedMerge(t *testing.T) {
	f := newColl(t, 2, 4, docsOf(200))
	docs, _, shards := f.open(t, `{"k": 4}`, "", 0)
	if len(docs) != 20 || len(shards) != 1 {
		t.Errorf("targeted read: %d documents from %d shards, want 20 from 1", len(docs), len(shards))
	}
	docs, p, shards := f.open(t, `{"a": {"$lt": 3}}`, `{"a": 1, "_id": 1}`, 0)
	if len(docs) != 60 || len(shards) != 2 {
		t.Fatalf("merge: %d documents from %d shards, want 60 from 2", len(docs), len(shards))
	}
	for i := 1; i < len(docs); i++ {
		a0, a1 := docs[i-1].Lookup("a").Int32(), docs[i].Lookup("a").Int32()
		if a0 > a1 {
			t.Fatalf("merge out of order at %d: a %d then %d (plan sorted %v)", i, a0, a1, p.Sorted)
		}
	}
	// Open pushes a limit down to each shard (mongos does the same); the caller applies
	// the final one to the merged stream.
	docs, _, shards = f.open(t, `{}`, `{"a": 1}`, 5)
	var examined int64
	for _, s := range shards {
		examined += s.Stats.DocsExamined
	}
	if len(docs) != 10 || examined != 10 || docs[4].Lookup("a").Int32() != 0 {
		t.Errorf("sort+limit 5: %d documents, %d examined over two shards; want 5 per shard", len(docs), examined)
	}
	// No partition can hold a shard key in an empty set: nothing is read.
	docs, p, shards = f.open(t, `{"k": {"$in": []}}`, "", 0)
	if p.Kind != query.PlanEOF || len(docs) != 0 || len(shards) != 0 {
		t.Errorf("empty shard-key $in: plan %d, %d documents from %d shards; want EOF", p.Kind, len(docs), len(shards))
	}
}

// TestOpenMultikeyBounds: on an index no document has held an array on, the bounds of a
// two-sided range intersect and the scan stops at the upper bound; once a document holds
// an array there, the write records the index as multikey first, and the bounds no longer
// intersect (an array can satisfy {$gt: 5} and {$lt: 3} with different elements) nor does
// the index stand for a sort under bounds (an array sorts by its smallest element).
func TestOpenMultikeyBounds(t *testing.T) {
	f := newColl(t, 1, 0, docsOf(100)) // a: i%10, ten documents per value
	_, _, shards := f.open(t, `{"a": {"$gte": 3, "$lt": 5}}`, "", 0)
	if keys := shards[0].Stats.KeysExamined; keys != 20 {
		t.Errorf("two-sided range on a non-multikey index examined %d keys, want 20", keys)
	}
	vals := []bsoncore.Value{
		bsonx.DocValue(streamtest.ExtDoc(t, `{"_id": 1000, "a": [1, 9], "c": 1000}`)),
		bsonx.DocValue(streamtest.ExtDoc(t, `{"_id": 1001, "a": [-7, 6], "c": 1001}`)),
	}
	var res write.Results
	if _, err := write.NewPath(f.cat, f.g, nil).Insert(context.Background(), f.ci, vals, 0, true, false, write.Concern{}, &res, nil); err != nil || res.N != 2 {
		t.Fatalf("insert: %v %v", err, res.Errs)
	}
	fresh, err := f.cat.Lookup("db", "c")
	if err != nil || fresh == nil || !fresh.Indexes[1].Multikey[0] {
		t.Fatalf("the a_1 index is not recorded as multikey after an array insert (%v)", err)
	}
	// f.ci is the version before the insert: Open must notice and plan again.
	docs, _, _ := f.open(t, `{"a": {"$gt": 5, "$lt": 3}}`, "", 0)
	if len(docs) != 2 {
		t.Errorf("{a: {$gt: 5, $lt: 3}} found %d documents, want _id 1000 and 1001 (elements 9 and 1, 6 and -7)", len(docs))
	}
	docs, p, _ := f.open(t, `{"a": {"$gt": 1, "$lt": 3}}`, `{"a": 1, "_id": 1}`, 0)
	var ids []int64
	for _, d := range docs {
		if id, ok := d.Lookup("_id").AsInt64OK(); ok && id >= 1000 {
			ids = append(ids, id)
		}
	}
	// Sort keys: _id 1001 by its smallest element -7, _id 1000 by 1: both before a: 2.
	if p.Sorted || len(ids) != 2 || ids[0] != 1001 || ids[1] != 1000 || docs[0].Lookup("_id").Int32() != 1001 {
		t.Errorf("sort on a multikey field under bounds: index-sorted %v, array documents %v first %v; want a blocking sort with 1001, 1000 first",
			p.Sorted, ids, docs[0].Lookup("_id"))
	}
}

// TestOpenExactBoundsExamines: a range on a non-multikey index whose bounds are exact reads
// each key and document once and returns them all without evaluating the filter; a conjunct
// on another field makes the stream evaluate it, over the same keys and documents.
func TestOpenExactBoundsExamines(t *testing.T) {
	f := newColl(t, 1, 0, docsOf(100)) // a: i%10, c: i
	for _, tc := range []struct {
		filter                  string
		keys, examined, matched int64
	}{
		{`{"a": {"$gte": 3, "$lt": 5}}`, 20, 20, 20},
		{`{"a": {"$gte": 3, "$lt": 5}, "c": {"$lt": 50}}`, 20, 20, 10},
	} {
		docs, p, shards := f.open(t, tc.filter, "", 0)
		st := shards[0].Stats
		got := [4]int64{int64(len(docs)), st.KeysExamined, st.DocsExamined, st.Returned}
		if want := [4]int64{tc.matched, tc.keys, tc.examined, tc.matched}; p.Kind != query.PlanIndex || got != want {
			t.Errorf("%s: plan %v; documents, keys, examined, returned %v; want an index plan and %v", tc.filter, p.Kind, got, want)
		}
		for _, d := range docs {
			if a := d.Lookup("a").Int32(); a < 3 || a >= 5 {
				t.Errorf("%s returned %s", tc.filter, d)
			}
		}
	}
}

// TestOpenShardKeyHashes: a filter that fixes the shard key reads only the documents of its
// hashes, not the whole partition, and a point read with the shard key needs no _id index
// lookup; the stream's charge follows what it examined.
func TestOpenShardKeyHashes(t *testing.T) {
	f := newColl(t, 2, 4, docsOf(200)) // k: i%10, twenty documents per key
	for _, tc := range []struct {
		filter     string
		n          int
		keys, docs int64
	}{
		{`{"k": 4}`, 20, 0, 20},
		{`{"k": {"$in": [4, 7, 4]}}`, 40, 0, 40},
		{`{"k": 4, "c": {"$lt": 50}}`, 5, 0, 20},
		{`{"k": 4, "_id": 14}`, 1, 0, 1},          // the hash is known: one point read
		{`{"k": 5, "_id": 14}`, 0, 0, 0},          // not at that hash
		{`{"_id": 14}`, 1, 2, 1},                  // each shard looks the hash up in its _id index
		{`{"k": 4, "a": {"$gte": 0}}`, 20, 0, 20}, // the key's documents, not the range's entries
		{`{"k": 4, "a": 3}`, 0, 20, 0},            // equality: the index (its a: 3 entries, all of k: 3, on this shard)
	} {
		docs, _, shards := f.open(t, tc.filter, "", 0)
		var keys, examined int64
		var charge float64
		for _, s := range shards {
			keys += s.Stats.KeysExamined
			examined += s.Stats.DocsExamined
			charge += s.Stats.Charge()
		}
		if len(docs) != tc.n || keys != tc.keys || examined != tc.docs {
			t.Errorf("%s: %d documents, %d keys and %d documents examined; want %d, %d, %d",
				tc.filter, len(docs), keys, examined, tc.n, tc.keys, tc.docs)
		}
		if charge < float64(len(shards)) {
			t.Errorf("%s: charged %v RU over %d shards, below the minimum of 1 RU per partition", tc.filter, charge, len(shards))
		}
	}
}

// TestOpenFindMinMaxExamines: find's min and max bound the hinted index's scan, so that it
// reads only the keys between them (min inclusive, max exclusive), alone and under a filter.
func TestOpenFindMinMaxExamines(t *testing.T) {
	f := newColl(t, 1, 0, docsOf(100)) // a: i%10; b: i%3; c: i
	for _, tc := range []struct {
		filter, hint, min, max string
		n                      int
		keys                   int64
	}{
		{`{}`, `{"a": 1}`, `{"a": 3}`, `{"a": 5}`, 20, 20},
		{`{}`, `{"a": 1}`, `{"a": 8}`, ``, 20, 20},
		{`{}`, `{"a": 1}`, ``, `{"a": 1}`, 10, 10},
		{`{"a": {"$gte": 4}}`, `{"a": 1}`, `{"a": 3}`, `{"a": 6}`, 20, 20},
		{`{"a": {"$in": [1, 4, 7]}}`, `{"a": 1}`, `{"a": 3}`, `{"a": 8}`, 20, 20},
		{`{}`, `{"b": 1, "c": 1}`, `{"b": 1, "c": 10}`, `{"b": 1, "c": 40}`, 10, 10},
		{`{"a": 9}`, `{"a": 1}`, `{"a": 3}`, `{"a": 5}`, 0, 0},
	} {
		flt, err := query.CompileFilter(streamtest.ExtDoc(t, tc.filter))
		if err != nil {
			t.Fatal(err)
		}
		q := &query.Query{CI: f.ci, Filter: flt, Hint: bsonx.DocValue(streamtest.ExtDoc(t, tc.hint))}
		var keys query.FindKeys
		if tc.min != "" {
			keys.Min = streamtest.ExtDoc(t, tc.min)
		}
		if tc.max != "" {
			keys.Max = streamtest.ExtDoc(t, tc.max)
		}
		s, shards, err := f.g.OpenFind(q, keys)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := streamtest.Drain(t, s)
		if err != nil {
			t.Fatal(err)
		}
		var examined int64
		for _, sh := range shards {
			examined += sh.Stats.KeysExamined
		}
		if len(docs) != tc.n || examined != tc.keys {
			t.Errorf("%s hint %s min %s max %s: %d documents, %d keys examined; want %d, %d",
				tc.filter, tc.hint, tc.min, tc.max, len(docs), examined, tc.n, tc.keys)
		}
	}
}
