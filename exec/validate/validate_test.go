package validate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/validate"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// healthyDocs are the documents setup inserts: one multikey, one without a.
var healthyDocs = []string{`{"_id": 1, "a": 10, "k": "x"}`, `{"_id": 2, "a": [20, 21], "k": "y"}`, `{"_id": 3, "k": "z"}`,
	`{"_id": 4, "a": "s", "k": "w"}`}

// setup creates db.c with index a_1 over shards stores (sharded on hashed k over one
// partition per shard when there are two) and inserts healthyDocs through the write path.
func setup(t *testing.T, shards int) (*catalog.Catalog, *catalog.Coll) {
	t.Helper()
	cat := fixture.Stores(t, shards)
	spec := store.Collection{DB: "db", Name: "c", Indexes: []store.Index{fixture.Index(t, "a_1", `{"a": 1}`)}}
	if shards == 2 {
		spec.ShardKey = streamtest.ExtDoc(t, `{"k": "hashed"}`)
		spec.Partitions = []store.Partition{{ID: 1, Shard: 0}, {ID: 2, Lo: 1 << 63, Shard: 1}}
	}
	ci := fixture.Create(t, cat, spec)
	vals := make([]bsoncore.Value, len(healthyDocs))
	for i, d := range healthyDocs {
		vals[i] = bsonx.DocValue(streamtest.ExtDoc(t, d))
	}
	var res write.Results
	p := write.NewPath(cat, query.New(cat, query.Options{}), nil)
	if _, err := p.Insert(context.Background(), ci, vals, 0, true, false, write.Concern{}, &res, nil); err != nil || res.N != int64(len(vals)) {
		t.Fatalf("insert: %v, %d inserted, errors %v", err, res.N, res.Errs)
	}
	return cat, cat.Refresh(ci)
}

// run validates ci and fails the test on an error.
func run(t *testing.T, cat *catalog.Catalog, ci *catalog.Coll, opts validate.Options) *validate.Result {
	t.Helper()
	res, err := validate.Run(context.Background(), cat, ci, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// change applies f to a batch of shard s and commits it: the inconsistencies the tests
// make on purpose, under the write path's back.
func change(t *testing.T, cat *catalog.Catalog, s int, f func(b catalog.Batch)) {
	t.Helper()
	b := cat.Shards()[s].NewBatch()
	defer b.Close()
	f(b)
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
}

// idKey is the encoded _id n.
func idKey(n int32) []byte { return bsonx.AppendKey(nil, bsonx.Int32Value(n)) }

// aKey is the a_1 key of value v (Extended JSON).
func aKey(t *testing.T, ci *catalog.Coll, v string) []byte {
	t.Helper()
	var key []byte
	if err := ci.Indexes[1].Keys(streamtest.ExtDoc(t, `{"a": `+v+`}`), func(k []byte) error {
		key = append([]byte(nil), k...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return key
}

// wantErrors fails unless res's errors are n, each containing one of subs in order.
func wantErrors(t *testing.T, res *validate.Result, subs ...string) {
	t.Helper()
	if res.Valid() != (len(subs) == 0) || len(res.Errors) != len(subs) {
		t.Fatalf("valid %v, errors %q; want %d errors", res.Valid(), res.Errors, len(subs))
	}
	for i, s := range subs {
		if !strings.Contains(res.Errors[i], s) {
			t.Errorf("error %d %q does not say %q", i, res.Errors[i], s)
		}
	}
}

// TestValidateHealthy checks the result for a consistent collection: every document
// counted, each index's entries (the _id index's being the documents), nothing wrong.
func TestValidateHealthy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shards int
		full   bool
	}{{"Unsharded", 1, false}, {"UnshardedFull", 1, true}, {"ShardedTwoShards", 2, true}} {
		t.Run(tc.name, func(t *testing.T) {
			cat, ci := setup(t, tc.shards)
			res := run(t, cat, ci, validate.Options{Full: tc.full})
			wantErrors(t, res)
			if res.NS != "db.c" || res.Records != 4 || res.InvalidDocuments != 0 || len(res.Warnings) != 0 {
				t.Errorf("ns %s records %d invalid %d warnings %q", res.NS, res.Records, res.InvalidDocuments, res.Warnings)
			}
			if len(res.Indexes) != 2 || res.Indexes[0].Name != "_id_" || res.Indexes[1].Name != "a_1" {
				t.Fatalf("indexes %+v", res.Indexes)
			}
			wantIDKeys := int64(4) // documents, or the entries of an _id index that has some
			if r := res.Indexes[0]; r.Keys != wantIDKeys || !r.Valid() {
				t.Errorf("_id_: %+v", r)
			}
			if r := res.Indexes[1]; r.Keys != 5 || !r.Valid() { // 10, 20, 21, null, "s"
				t.Errorf("a_1: %+v, want 5 keys", r)
			}
			if len(res.ExtraEntries) != 0 || len(res.MissingEntries) != 0 {
				t.Errorf("entries extra %v missing %v", res.ExtraEntries, res.MissingEntries)
			}
		})
	}
}

// TestValidateExtraEntry checks an index entry whose document does not exist: the index
// is invalid, the entry is named with its _id and decoded key, no document is invalid.
func TestValidateExtraEntry(t *testing.T) {
	cat, ci := setup(t, 1)
	change(t, cat, 0, func(b catalog.Batch) {
		b.SetIndex(ci.Meta.ID, ci.Indexes[1].Meta.ID, aKey(t, ci, `99`), 0, idKey(100))
	})
	res := run(t, cat, ci, validate.Options{})
	wantErrors(t, res, "index a_1: 0 keys of documents are missing from it and 1 of its entries match no document's key")
	if r := res.Indexes[1]; r.Keys != 6 || r.Extra != 1 || r.Missing != 0 || r.Valid() {
		t.Errorf("a_1: %+v", r)
	}
	if res.InvalidDocuments != 0 || len(res.ExtraEntries) != 1 || len(res.MissingEntries) != 0 {
		t.Fatalf("invalid %d, extra %v, missing %v", res.InvalidDocuments, res.ExtraEntries, res.MissingEntries)
	}
	e := res.ExtraEntries[0]
	if id, _ := e.ID.Int32OK(); e.Index != "a_1" || e.Shard != 0 || e.Hash != 0 || id != 100 || e.RawKey != nil {
		t.Errorf("extra entry %+v", e)
	}
	if a, _ := e.Key.Lookup("a").Int32OK(); a != 99 {
		t.Errorf("extra entry key %v, want {a: 99}", e.Key)
	}
}

// TestValidateMissingEntry checks a document missing one of its index entries: the index
// is invalid, the document counted invalid once, the entry named.
func TestValidateMissingEntry(t *testing.T) {
	cat, ci := setup(t, 1)
	change(t, cat, 0, func(b catalog.Batch) {
		b.DeleteIndex(ci.Meta.ID, ci.Indexes[1].Meta.ID, aKey(t, ci, `21`), 0, idKey(2))
	})
	res := run(t, cat, ci, validate.Options{})
	wantErrors(t, res, "index a_1: 1 keys of documents are missing from it and 0 of its entries match no document's key")
	if r := res.Indexes[1]; r.Keys != 4 || r.Missing != 1 || r.Extra != 0 {
		t.Errorf("a_1: %+v", r)
	}
	if res.InvalidDocuments != 1 || len(res.MissingEntries) != 1 || len(res.ExtraEntries) != 0 {
		t.Fatalf("invalid %d, missing %v, extra %v", res.InvalidDocuments, res.MissingEntries, res.ExtraEntries)
	}
	e := res.MissingEntries[0]
	if id, _ := e.ID.Int32OK(); e.Index != "a_1" || id != 2 {
		t.Errorf("missing entry %+v", e)
	}
	if a, _ := e.Key.Lookup("a").Int32OK(); a != 21 {
		t.Errorf("missing entry key %v, want {a: 21}", e.Key)
	}
}

// TestValidateStatsDrift checks statistics that disagree with the documents counted, and
// statistics missing for a range that holds documents.
func TestValidateStatsDrift(t *testing.T) {
	cat, ci := setup(t, 1)
	change(t, cat, 0, func(b catalog.Batch) { b.AddStats(ci.Meta.ID, 0, 1, 10) })
	res := run(t, cat, ci, validate.Options{})
	wantErrors(t, res, "shard 0: statistics of hash range 0x0 say 5 documents of ")
	if res.InvalidDocuments != 0 || !res.Indexes[1].Valid() {
		t.Errorf("stats drift made documents or indexes invalid: %+v", res)
	}

	cat, ci = setup(t, 1)
	docs, bytes, err := cat.Shards()[0].Stats(ci.Meta.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	change(t, cat, 0, func(b catalog.Batch) { b.AddStats(ci.Meta.ID, 0, -docs, -bytes) })
	res = run(t, cat, ci, validate.Options{})
	wantErrors(t, res, "shard 0: statistics of hash range 0x0 are missing, the range holds 4 documents of ")
}

// TestValidateDocuments checks the problems of a document itself: stored under another
// _id's key, and (with Full only) BSON that is not well formed.
func TestValidateDocuments(t *testing.T) {
	cat, ci := setup(t, 1)
	doc := streamtest.ExtDoc(t, `{"_id": 6}`)
	change(t, cat, 0, func(b catalog.Batch) {
		b.SetDoc(ci.Meta.ID, 0, idKey(5), doc)
		b.SetIndex(ci.Meta.ID, ci.Indexes[1].Meta.ID, aKey(t, ci, `null`), 0, idKey(5))
		b.AddStats(ci.Meta.ID, 0, 1, int64(len(doc)))
	})
	res := run(t, cat, ci, validate.Options{})
	wantErrors(t, res, `shard 0: document {"$numberInt":"6"} is stored under another _id`)
	if res.Records != 5 || res.InvalidDocuments != 1 {
		t.Errorf("records %d invalid %d", res.Records, res.InvalidDocuments)
	}

	cat, ci = setup(t, 1)
	bad := streamtest.ExtDoc(t, `{"_id": 7, "s": "abc"}`)
	bad[16] = 100 // the string's length runs past the document
	change(t, cat, 0, func(b catalog.Batch) {
		b.SetDoc(ci.Meta.ID, 0, idKey(7), bad)
		b.SetIndex(ci.Meta.ID, ci.Indexes[1].Meta.ID, aKey(t, ci, `null`), 0, idKey(7))
		b.AddStats(ci.Meta.ID, 0, 1, int64(len(bad)))
	})
	if res := run(t, cat, ci, validate.Options{Full: false}); !res.Valid() {
		t.Errorf("without full, the BSON is not checked: %q", res.Errors)
	}
	res = run(t, cat, ci, validate.Options{Full: true})
	// Its keys are not generated, so its index entry is counted extra.
	wantErrors(t, res, "shard 0: document at hash 0x0 is not valid BSON: too few bytes to read next component",
		"index a_1: 0 keys of documents are missing from it and 1 of its entries match no document's key")
	if res.InvalidDocuments != 1 {
		t.Errorf("invalid %d, want 1", res.InvalidDocuments)
	}
}

// TestValidatePlacement checks, on two shards, a document in a partition its shard does
// not own (a warning instead while a move is in flight) and one stored at a hash that is
// not its shard key's.
func TestValidatePlacement(t *testing.T) {
	cat, ci := setup(t, 2)
	doc := streamtest.ExtDoc(t, `{"_id": 9, "k": "q"}`)
	h, err := ci.ShardHash(doc)
	if err != nil {
		t.Fatal(err)
	}
	owner := ci.Map.Partition(ci.Map.Locate(h)).Shard
	other := 1 - owner
	change(t, cat, other, func(b catalog.Batch) {
		b.SetDoc(ci.Meta.ID, h, idKey(9), doc)
		b.SetIndex(ci.Meta.ID, ci.Indexes[1].Meta.ID, aKey(t, ci, `null`), h, idKey(9))
		b.SetIndex(ci.Meta.ID, store.IDIndexID, ci.Indexes[0].IDIndexKey(nil, bsonx.Int32Value(9)), h, idKey(9))
		b.AddStats(ci.Meta.ID, h, 1, int64(len(doc)))
	})
	res := run(t, cat, ci, validate.Options{})
	wantErrors(t, res, `document {"$numberInt":"9"} lies in a partition owned by shard`)
	if res.InvalidDocuments != 1 || res.Records != 5 {
		t.Errorf("invalid %d records %d", res.InvalidDocuments, res.Records)
	}
	asked := 0
	inFlight := func() func(int, uint64) bool {
		asked++
		return func(s int, hash uint64) bool { return s == other && hash>>63 == h>>63 }
	}
	res = run(t, cat, ci, validate.Options{InFlight: inFlight})
	wantErrors(t, res)
	if asked != 1 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "holds documents of a partition being moved") {
		t.Errorf("InFlight called %d times, warnings %q", asked, res.Warnings)
	}

	cat, ci = setup(t, 2)
	wrong := h ^ 1 // same partition, not the shard key's hash
	change(t, cat, owner, func(b catalog.Batch) {
		b.SetDoc(ci.Meta.ID, wrong, idKey(9), doc)
		b.SetIndex(ci.Meta.ID, ci.Indexes[1].Meta.ID, aKey(t, ci, `null`), wrong, idKey(9))
		b.SetIndex(ci.Meta.ID, store.IDIndexID, ci.Indexes[0].IDIndexKey(nil, bsonx.Int32Value(9)), wrong, idKey(9))
		b.AddStats(ci.Meta.ID, wrong, 1, int64(len(doc)))
	})
	res = run(t, cat, ci, validate.Options{})
	wantErrors(t, res, "not its shard key's")
}

// TestValidateWaitsForWriters checks that validate waits for the key locks writers hold,
// bounded by its context.
func TestValidateWaitsForWriters(t *testing.T) {
	cat, ci := setup(t, 1)
	unlock := cat.Locks().LockMany([]uint64{42})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := validate.Run(ctx, cat, ci, validate.Options{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run while a writer holds a lock: %v", err)
	}
	unlock()
	ddl, err := cat.LockDDLCtx(context.Background()) // Run released the DDL lock when it gave up
	if err != nil {
		t.Fatal(err)
	}
	ddl()
	wantErrors(t, run(t, cat, ci, validate.Options{}))
}
