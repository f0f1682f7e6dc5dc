package query_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// openFirst reads q's first document as a write's general read does (Open, then the
// charge of every shard's stream). q is a point plan on this node: its document outlives
// the stream (write.Path's ownsDoc).
func openFirst(t testing.TB, g *query.Engine, q *query.Query) (bsoncore.Document, float64, error) {
	t.Helper()
	s, _, shards, err := g.Open(q)
	if err != nil {
		return nil, 0, err
	}
	doc, err := s.Next(context.Background())
	s.Close()
	ru := 0.0
	for _, ss := range shards {
		ru += ss.Stats.Charge()
	}
	return doc, ru, err
}

// idColl creates db.i sharded on hashed _id over 4 partitions on 2 shards, holding docs.
func idColl(t *testing.T, docs []string) *collFixture {
	t.Helper()
	cat := fixture.Stores(t, 2)
	spec := store.Collection{DB: "db", Name: "i", ShardKey: streamtest.ExtDoc(t, `{"_id": "hashed"}`)}
	for i := range 4 {
		spec.Partitions = append(spec.Partitions, store.Partition{ID: uint64(i + 1), Lo: uint64(i) << 62, Shard: i % 2})
	}
	return createColl(t, cat, spec, docs)
}

// TestReadPointAsOpen: a point read by _id reads the same document at the same charge as
// the planned query, applies the rest of the filter, reads an _id whose hash it does not know
// on each shard in turn, and declines (ok false) what it does not read directly: several
// _ids, a sort, a string under a collation.
func TestReadPointAsOpen(t *testing.T) {
	docs := docsOf(40)
	colls := map[string]*collFixture{
		"unsharded":  newColl(t, 1, 0, docs),
		"shardedK":   newColl(t, 2, 4, docs),
		"shardedID":  idColl(t, docs),
		"onePartK":   newColl(t, 1, 4, docs), // sharded on k, every partition on one shard
		"unsharded2": newColl(t, 2, 0, docs),
	}
	for _, tc := range []struct {
		coll, filter, sort string
		ok                 bool
	}{
		{coll: "unsharded", filter: `{"_id": 5}`, ok: true},
		{coll: "unsharded", filter: `{"_id": 5, "a": 5}`, ok: true},
		{coll: "unsharded", filter: `{"_id": 5, "a": 4}`, ok: true}, // the document does not match
		{coll: "unsharded", filter: `{"_id": 500}`, ok: true},       // no such document
		{coll: "unsharded", filter: `{"_id": {"$in": [1, 2]}}`},
		{coll: "unsharded", filter: `{"_id": 5}`, sort: `{"a": 1}`},
		{coll: "unsharded", filter: `{"_id": {"$gt": 5}}`},
		{coll: "unsharded2", filter: `{"_id": 7}`, ok: true},
		{coll: "shardedK", filter: `{"_id": 5}`, ok: true},   // its hash is on either shard: both read in turn
		{coll: "shardedK", filter: `{"_id": 500}`, ok: true}, // on neither
		{coll: "shardedK", filter: `{"_id": 6}`, ok: true},
		{coll: "shardedK", filter: `{"_id": 7}`, ok: true},
		{coll: "shardedK", filter: `{"_id": 8}`, ok: true},
		{coll: "shardedK", filter: `{"_id": 7, "a": 6}`, ok: true}, // the document does not match
		{coll: "shardedK", filter: `{"_id": 5, "k": 5}`, ok: true},
		{coll: "shardedK", filter: `{"_id": 5, "k": 6}`, ok: true}, // another partition: no match
		{coll: "shardedK", filter: `{"_id": 5, "k": {"$in": [5, 6]}}`, ok: true},
		{coll: "onePartK", filter: `{"_id": 5}`, ok: true}, // the _id index finds its hash
		{coll: "onePartK", filter: `{"_id": 500}`, ok: true},
		{coll: "shardedID", filter: `{"_id": 5}`, ok: true},
		{coll: "shardedID", filter: `{"_id": 13, "c": 13}`, ok: true},
		{coll: "shardedID", filter: `{"_id": 13, "c": 12}`, ok: true},
		{coll: "shardedID", filter: `{"_id": 5, "_id": 6}`, ok: true}, // nothing can match
	} {
		t.Run(tc.coll+" "+tc.filter, func(t *testing.T) {
			f := colls[tc.coll]
			query := func() *query.Query {
				flt, err := query.CompileFilter(streamtest.ExtDoc(t, tc.filter))
				if err != nil {
					t.Fatal(err)
				}
				q := &query.Query{CI: f.ci, Filter: flt, Limit: 1}
				if tc.sort != "" {
					q.Sort, _ = query.ParseSort(streamtest.ExtDoc(t, tc.sort))
				}
				return q
			}
			doc, ru, ok, err := f.g.ReadPoint(context.Background(), query())
			if err != nil || ok != tc.ok {
				t.Fatalf("ReadPoint: ok %v, %v; want ok %v", ok, err, tc.ok)
			}
			if !ok {
				return
			}
			want, wantRU, err := openFirst(t, f.g, query())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(doc, want) || ru != wantRU {
				t.Errorf("ReadPoint: %v at %v RU, Open: %v at %v RU", doc, ru, want, wantRU)
			}
		})
	}
}

// TestReadPointThrottled: a point read is admitted by its partition's budget as the planned
// query is: the same reads of a collection provisioned at 1 RU/s (one partition, no burst
// beyond its rate) are refused with 16500 at the same point, and charge the budget the same.
func TestReadPointThrottled(t *testing.T) {
	f := newColl(t, 1, 0, docsOf(10))
	now := time.Unix(1e9, 0)
	read := func(point bool) []string {
		b := shard.NewBudgets(f.ci.Map, 3, shard.BudgetOptions{Clock: func() time.Time { return now }})
		g := query.New(f.cat, query.Options{Budgets: func(*catalog.Coll) *shard.Budgets { return b }})
		var out []string
		for i := range 6 {
			flt, err := query.CompileFilter(streamtest.ExtDoc(t, fmt.Sprintf(`{"_id": %d}`, i)))
			if err != nil {
				t.Fatal(err)
			}
			q := &query.Query{CI: f.ci, Filter: flt, Limit: 1}
			var doc bsoncore.Document
			var ru float64
			if point {
				var ok bool
				doc, ru, ok, err = g.ReadPoint(context.Background(), q)
				if !ok {
					t.Fatalf("ReadPoint declined %v", flt)
				}
			} else {
				doc, ru, err = openFirst(t, g, q)
			}
			var me *mongoerr.Error
			code := 0
			if errors.As(err, &me) {
				code = int(me.Code)
			} else if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%v %v %d", len(doc) > 0, ru, code))
		}
		return out
	}
	point, general := read(true), read(false)
	if fmt.Sprint(point) != fmt.Sprint(general) {
		t.Fatalf("point reads: %v\nplanned reads: %v", point, general)
	}
	if last := point[len(point)-1]; last != "false 1 16500" { // a refused read reports MinRU, as before
		t.Fatalf("the last read of %v was not throttled", point)
	}
}

// BenchmarkPointRead reads a document by _id as an update's read does: planned and opened
// (open), or read directly (point, ReadPoint); on one shard, and (Shards2) on two with the
// collection sharded on another field, the document on the second shard read.
//
//	go test ./exec/query -run '^$' -bench BenchmarkPointRead
func BenchmarkPointRead(b *testing.B) {
	for _, shards := range []int{1, 2} {
		f, filter, prefix := newColl(b, 1, 0, docsOf(100)), `{"_id": 42}`, ""
		if shards == 2 {
			f, filter, prefix = newColl(b, 2, 4, docsOf(100)), `{"_id": 5}`, "Shards2/" // _id 5: the second shard's
		}
		flt, err := query.CompileFilter(streamtest.ExtDoc(b, filter))
		if err != nil {
			b.Fatal(err)
		}
		for _, point := range []bool{false, true} {
			b.Run(prefix+map[bool]string{false: "open", true: "point"}[point], func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					q := &query.Query{CI: f.ci, Filter: flt, Limit: 1}
					var doc bsoncore.Document
					var ok bool
					if point {
						doc, _, ok, err = f.g.ReadPoint(context.Background(), q)
					} else {
						doc, _, err = openFirst(b, f.g, q)
						ok = true
					}
					if err != nil || doc == nil || !ok {
						b.Fatal(doc, ok, err)
					}
				}
			})
		}
	}
}

// TestFindIDSharedByPartitions: in a collection sharded on k, documents of several logical
// partitions on one shard may share an _id, and a find by _id alone finds each through the
// _id index, one entry at a time: every one without a limit (keys examined: one per entry,
// and one for an _id the index does not hold), only the first under limit 1, which examines
// one key and leaves the other entries unread.
func TestFindIDSharedByPartitions(t *testing.T) {
	f := newColl(t, 1, 4, []string{
		`{"_id": 1, "k": 1}`, `{"_id": 1, "k": 2}`, `{"_id": 1, "k": 3}`, `{"_id": 2, "k": 1}`,
	})
	for _, tc := range []struct {
		filter     string
		limit      int64
		docs, keys int
	}{
		{filter: `{"_id": 1}`, docs: 3, keys: 3},
		{filter: `{"_id": 1}`, limit: 1, docs: 1, keys: 1},
		{filter: `{"_id": 2}`, docs: 1, keys: 1},
		{filter: `{"_id": 3}`, docs: 0, keys: 1}, // a miss examined the index once
		{filter: `{"_id": {"$in": [1, 2, 3]}}`, docs: 4, keys: 5},
		{filter: `{"_id": 1, "k": {"$ne": 2}}`, docs: 2, keys: 3},
	} {
		t.Run(fmt.Sprintf("%s limit %d", tc.filter, tc.limit), func(t *testing.T) {
			flt, err := query.CompileFilter(streamtest.ExtDoc(t, tc.filter))
			if err != nil {
				t.Fatal(err)
			}
			s, p, shards, err := f.g.Open(&query.Query{CI: f.ci, Filter: flt, Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			if p.Kind != query.PlanIDs {
				t.Fatalf("plan %v, want PlanIDs", p.Kind)
			}
			var docs []bsoncore.Document // as a cursor reads: no further than the limit
			for tc.limit == 0 || int64(len(docs)) < tc.limit {
				doc, err := s.Next(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if doc == nil {
					break
				}
				docs = append(docs, append(bsoncore.Document(nil), doc...))
			}
			s.Close()
			keys := int64(0)
			for _, s := range shards {
				keys += s.Stats.KeysExamined
			}
			if len(docs) != tc.docs || keys != int64(tc.keys) {
				t.Fatalf("%d documents, %d keys examined; want %d, %d: %v", len(docs), keys, tc.docs, tc.keys, docs)
			}
		})
	}
}
