package store

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// openCatalog opens a catalog on db or fails the test.
func openCatalog(t testing.TB, db *DB) *Catalog {
	t.Helper()
	c, err := OpenCatalog(db)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bdoc builds a small document {k: v}.
func bdoc(k string, v int32) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt32(k, v).Build()
}

func TestCatalogCreateCollection(t *testing.T) {
	db := openMem(t)
	cat := openCatalog(t, db)
	opts := bdoc("capped", 1)
	c, err := cat.CreateCollection(Collection{DB: "app", Name: "people", Options: opts, Throughput: 25000,
		ShardKey:   bdoc("region", 1),
		Partitions: []Partition{{Lo: 0}, {Lo: 1 << 62, Shard: 1}, {Lo: 1 << 63, Shard: 2}},
		Indexes:    []Index{{Name: "a_1", Key: bdoc("a", 1), Spec: bdoc("unique", 1)}}})
	if err != nil {
		t.Fatal(err)
	}
	if c.ID == 0 || c.UUID == ([16]byte{}) || c.CreatedAt.IsZero() || c.Version != 1 {
		t.Fatalf("assigned fields: %+v", c)
	}
	if len(c.Indexes) != 2 || c.Indexes[0].Name != IDIndexName || c.Indexes[0].ID != IDIndexID ||
		c.Indexes[1].ID != 2 || c.NextIndexID != 3 || !c.Indexes[0].Ready {
		t.Fatalf("indexes: %+v next %d", c.Indexes, c.NextIndexID)
	}
	if c.Partitions[0].ID != 1 || c.Partitions[2].ID != 3 || c.NextPartitionID != 4 {
		t.Fatalf("partitions: %+v next %d", c.Partitions, c.NextPartitionID)
	}
	if lo, hi := c.PartitionRange(2); lo != 1<<63 || hi != 0 {
		t.Fatalf("PartitionRange(2) = %x, %x", lo, hi)
	}
	opts[4] = 0x7f // the catalog keeps its own copy
	s := cat.State()
	if got := s.Collection("app", "people"); got != c || got.Options[4] == 0x7f {
		t.Fatal("State does not hold the created record, or aliases the input")
	}
	if s.Database("app") == nil || s.CollectionByID(c.ID) != c || !s.Live(c.ID) {
		t.Fatal("implicit database or ID lookup missing")
	}
	if _, err := cat.CreateCollection(Collection{DB: "app", Name: "people"}); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate CreateCollection = %v", err)
	}
	if _, err := cat.CreateCollection(Collection{DB: "app", Name: "bad", Partitions: []Partition{{Lo: 5}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("partitions not starting at 0 = %v", err)
	}
}

func TestCatalogRecordsSurviveReopen(t *testing.T) {
	mem := vfs.NewMem()
	db := openOn(t, mem, "db")
	cat := openCatalog(t, db)
	if err := cat.CreateDatabase("shared", bdoc("throughput", 400)); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateCollection(Collection{DB: "shared", Name: "a", ShardKey: bdoc("k", 1),
		Options: bdoc("x", 1), Throughput: 10,
		Indexes: []Index{{Name: "b_1", Key: bdoc("b", 1), Spec: bdoc("sparse", 1), Ready: false}}}); err != nil {
		t.Fatal(err)
	}
	c1, err := cat.UpdateCollection("shared", "a", func(c *Collection) error {
		c.Partitions = append(c.Partitions, Partition{ID: c.NextPartitionID, Lo: 1 << 63, Shard: 3})
		c.NextPartitionID++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openOn(t, mem, "db")
	cat = openCatalog(t, db)
	got := cat.State().Collection("shared", "a")
	if !reflect.DeepEqual(got, c1) {
		t.Fatalf("after reopen:\n%+v\nwant\n%+v", got, c1)
	}
	if d := cat.State().Database("shared"); d == nil || !reflect.DeepEqual(d.Options, bdoc("throughput", 400)) {
		t.Fatalf("database after reopen: %+v", d)
	}
}

// TestCatalogIDsNeverReused drops collections, restarts, and checks that new collections get
// fresh IDs each time.
func TestCatalogIDsNeverReused(t *testing.T) {
	mem := vfs.NewMem()
	seen := map[CollID]bool{}
	for round := range 3 {
		db := openOn(t, mem, "db")
		cat := openCatalog(t, db)
		for i := range 3 {
			c, err := cat.CreateCollection(Collection{DB: "d", Name: fmt.Sprint("c", i)})
			if err != nil {
				t.Fatal(err)
			}
			if seen[c.ID] {
				t.Fatalf("round %d: ID %d reused", round, c.ID)
			}
			seen[c.ID] = true
		}
		if _, err := cat.DropDatabase("d"); err != nil { // drop all: the highest ID is gone too
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCatalogDropCollection(t *testing.T) {
	db := openMem(t)
	cat := openCatalog(t, db)
	c, _ := cat.CreateCollection(Collection{DB: "d", Name: "c"})
	old := cat.State()
	got, err := cat.DropCollection("d", "c")
	if err != nil || got != c {
		t.Fatalf("DropCollection = %v, %v", got, err)
	}
	if cat.State().Collection("d", "c") != nil || cat.State().CollectionByID(c.ID) != nil {
		t.Fatal("dropped collection still in the state")
	}
	if old.Collection("d", "c") != c {
		t.Fatal("an older state changed: copy-on-write broken")
	}
	if cat.State().Database("d") == nil {
		t.Fatal("dropping the last collection dropped the database")
	}
	if _, err := cat.DropCollection("d", "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second drop = %v", err)
	}
}

func TestCatalogDropDatabase(t *testing.T) {
	db := openMem(t)
	cat := openCatalog(t, db)
	for _, n := range []string{"b", "a", "c"} {
		if _, err := cat.CreateCollection(Collection{DB: "d", Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	keep, _ := cat.CreateCollection(Collection{DB: "other", Name: "a"})
	dropped, err := cat.DropDatabase("d")
	if err != nil || len(dropped) != 3 || dropped[0].Name != "a" || dropped[2].Name != "c" {
		t.Fatalf("DropDatabase = %v, %v", dropped, err)
	}
	s := cat.State()
	if s.Database("d") != nil || len(s.Collections("d")) != 0 {
		t.Fatal("database d still present")
	}
	for _, c := range dropped {
		if s.CollectionByID(c.ID) != nil {
			t.Fatalf("collection %d still reachable by ID", c.ID)
		}
	}
	if s.Collection("other", "a") != keep {
		t.Fatal("other database touched")
	}
	if dbs := s.Databases(); len(dbs) != 1 || dbs[0].Name != "other" {
		t.Fatalf("Databases = %v", dbs)
	}
	if _, err := cat.DropDatabase("d"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second DropDatabase = %v", err)
	}
	if err := cat.CreateDatabase("other", nil); !errors.Is(err, ErrExists) {
		t.Fatalf("CreateDatabase of an existing db = %v", err)
	}
}

func TestCatalogRenameCollection(t *testing.T) {
	db := openMem(t)
	cat := openCatalog(t, db)
	src, _ := cat.CreateCollection(Collection{DB: "d", Name: "src"})
	dst, _ := cat.CreateCollection(Collection{DB: "d2", Name: "dst"})
	cases := []struct {
		name                 string
		db, from, toDB, to   string
		dropTarget           bool
		wantErr              error
		wantDropped, wantNew bool
	}{
		{"MissingSource", "d", "nope", "d", "x", false, ErrNotFound, false, false},
		{"OntoItself", "d", "src", "d", "src", false, ErrInvalid, false, false},
		{"TargetExists", "d", "src", "d2", "dst", false, ErrExists, false, false},
		{"DropTarget", "d", "src", "d2", "dst", true, nil, true, true},
		{"AcrossDatabasesImplicitCreate", "d2", "dst", "d3", "moved", false, nil, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			renamed, dropped, err := cat.RenameCollection(tc.db, tc.from, tc.toDB, tc.to, tc.dropTarget)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if (dropped != nil) != tc.wantDropped || (renamed != nil) != tc.wantNew {
				t.Fatalf("renamed=%v dropped=%v", renamed, dropped)
			}
			if renamed != nil && cat.State().Collection(tc.toDB, tc.to) != renamed {
				t.Fatal("renamed collection not in the state")
			}
			if renamed != nil && cat.State().Collection(tc.db, tc.from) != nil {
				t.Fatal("old name still present")
			}
		})
	}
	moved := cat.State().Collection("d3", "moved")
	if moved == nil || moved.ID != src.ID || moved.UUID != src.UUID || moved.Version != 3 {
		t.Fatalf("after two renames: %+v (src ID %d)", moved, src.ID)
	}
	if cat.State().CollectionByID(dst.ID) != nil {
		t.Fatal("dropped target still reachable")
	}
}

func TestCatalogUpdateCollection(t *testing.T) {
	db := openMem(t)
	cat := openCatalog(t, db)
	c, _ := cat.CreateCollection(Collection{DB: "d", Name: "c"})
	boom := errors.New("boom")
	cases := []struct {
		name    string
		fn      func(*Collection) error
		wantErr error
	}{
		{"FnError", func(c *Collection) error { c.Throughput = 5; return boom }, boom},
		{"ChangeID", func(c *Collection) error { c.ID++; return nil }, ErrInvalid},
		{"Rename", func(c *Collection) error { c.Name = "x"; return nil }, ErrInvalid},
		{"DuplicateIndexName", func(c *Collection) error {
			c.Indexes = append(c.Indexes, Index{ID: c.NextIndexID, Name: IDIndexName})
			c.NextIndexID++
			return nil
		}, ErrInvalid},
		{"IndexIDNotBelowNext", func(c *Collection) error {
			c.Indexes = append(c.Indexes, Index{ID: c.NextIndexID, Name: "x"})
			return nil
		}, ErrInvalid},
		{"UnsortedPartitions", func(c *Collection) error {
			c.Partitions = []Partition{{ID: 1, Lo: 0}, {ID: 2, Lo: 9}, {ID: 3, Lo: 5}}
			c.NextPartitionID = 4
			return nil
		}, ErrInvalid},
		{"MutateSharedIndexSlice", func(c *Collection) error {
			c.Indexes[0].Name = "mutated" // a deep copy: must not leak into the state
			return boom
		}, boom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cat.UpdateCollection("d", "c", tc.fn); !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got := cat.State().Collection("d", "c"); got != c || got.Indexes[0].Name != IDIndexName {
				t.Fatal("failed update changed the state")
			}
		})
	}
	n, err := cat.UpdateCollection("d", "c", func(c *Collection) error {
		c.Throughput = 20000
		c.Indexes = append(c.Indexes, Index{ID: c.NextIndexID, Name: "a_1", Key: bdoc("a", 1)})
		c.NextIndexID++
		return nil
	})
	if err != nil || n.Throughput != 20000 || n.Version != c.Version+1 || n.Index("a_1") == nil || n.IndexByID(2) == nil {
		t.Fatalf("update = %+v, %v", n, err)
	}
	if c.Throughput != 0 || len(c.Indexes) != 1 {
		t.Fatal("update modified the previous record")
	}
	if _, err := cat.UpdateCollection("d", "nope", func(*Collection) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of a missing collection = %v", err)
	}
	d, err := cat.UpdateDatabase("d", func(d *Database) error { d.Options = bdoc("throughput", 1000); return nil })
	if err != nil || cat.State().Database("d") != d {
		t.Fatalf("UpdateDatabase = %v, %v", d, err)
	}
}

// TestCatalogConcurrentReaders reads the state from several goroutines while collections are
// created, updated and dropped (run with -race): readers never block and always see a
// consistent state.
func TestCatalogConcurrentReaders(t *testing.T) {
	db := openMem(t)
	cat := openCatalog(t, db)
	var stop atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				s := cat.State()
				for _, c := range s.Collections("d") {
					if s.CollectionByID(c.ID) != c || c.Index(IDIndexName) == nil {
						t.Error("inconsistent state")
						return
					}
				}
				reads.Add(1)
			}
		})
	}
	for i := range 50 {
		name := fmt.Sprint("c", i)
		if _, err := cat.CreateCollection(Collection{DB: "d", Name: name}); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.UpdateCollection("d", name, func(c *Collection) error { c.Throughput++; return nil }); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := cat.DropCollection("d", name); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(10 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("readers did not run")
	}
	if n := len(cat.State().Collections("d")); n != 33 {
		t.Fatalf("%d collections left, want 33", n)
	}
}

func TestCatalogCodecRoundTrip(t *testing.T) {
	c := &Collection{ID: 7, DB: "d", Name: "c", UUID: newUUID(), CreatedAt: now(),
		Options: bdoc("a", 1), ShardKey: bdoc("k", 1), Throughput: 1 << 40,
		Indexes:     []Index{{ID: 1, Name: IDIndexName, Key: idIndexKey, Ready: true}, {ID: 4, Name: "x", Key: bdoc("x", -1), Spec: bdoc("unique", 1)}},
		Partitions:  []Partition{{ID: 1, Lo: 0, Shard: 0}, {ID: 9, Lo: 1<<64 - 1, Shard: 3}},
		NextIndexID: 5, NextPartitionID: 10, Version: 42, NoBalance: true, ReshardNode: "node-b", ReshardOf: "events",
		SearchIndexes: []bsoncore.Document{bdoc("name", 1), bdoc("name", 2)}}
	got, err := decodeCollection(encodeCollection(c))
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip:\n%+v\n%v\nwant\n%+v", got, err, c)
	}
	if _, err := decodeCollection([]byte{5, 0, 0, 0, 1}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage record = %v", err)
	}
	// Unknown fields are ignored: a newer binary may add some.
	raw := encodeCollection(c)
	extended := bsoncore.NewDocumentBuilder().AppendString("future", "x").Build()
	merged := slices.Concat(raw[:len(raw)-1], extended[4:])
	merged = fixLen(merged)
	if got, err := decodeCollection(merged); err != nil || got.Version != 42 {
		t.Fatalf("record with an unknown field: %v", err)
	}
}

// TestRenameClearsReshardMark: the copy of a layout change renamed over its source is the
// collection itself, no longer a copy in flight.
func TestRenameClearsReshardMark(t *testing.T) {
	cat := openCatalog(t, openMem(t))
	if _, err := cat.CreateCollection(Collection{DB: "d", Name: "events"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateCollection(Collection{DB: "d", Name: "system.resharding.1", ReshardNode: "node-a", ReshardOf: "events"}); err != nil {
		t.Fatal(err)
	}
	got, dropped, err := cat.RenameCollection("d", "system.resharding.1", "d", "events", true)
	if err != nil || dropped == nil || got.ReshardNode != "" || got.ReshardOf != "" {
		t.Fatalf("rename of a layout change's copy over its source = %+v (dropped %v), %v", got, dropped, err)
	}
	if c := cat.State().Collection("d", "events"); c.ReshardNode != "" {
		t.Fatalf("the catalog keeps the mark: %+v", c)
	}
}

// fixLen rewrites the int32 length prefix of a document built by concatenation.
func fixLen(doc []byte) []byte {
	n := len(doc)
	doc[0], doc[1], doc[2], doc[3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return doc
}

func TestOrphanCollections(t *testing.T) {
	db := openMem(t)
	cat := openCatalog(t, db)
	live, _ := cat.CreateCollection(Collection{DB: "d", Name: "live"})
	dead, _ := cat.CreateCollection(Collection{DB: "d", Name: "dead"})
	b := db.NewBatch()
	for _, id := range []CollID{live.ID, dead.ID} {
		b.SetDoc(id, 5, idN(1), []byte("x"))
		b.AddStats(id, 5, 1, 1)
	}
	b.SetIndex(1000, 1, idN(1), 0, idN(1)) // index entries only
	b.AddStats(1<<32-1, 0, 1, 1)           // stats only, at the last possible ID
	mustCommit(t, b)
	if _, err := cat.DropCollection("d", "dead"); err != nil {
		t.Fatal(err)
	}
	got, err := OrphanCollections(db, cat.State().Live)
	if err != nil {
		t.Fatal(err)
	}
	if want := []CollID{dead.ID, 1000, 1<<32 - 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("OrphanCollections = %v, want %v", got, want)
	}
	for _, id := range got {
		if err := db.DeleteCollectionData(id); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := OrphanCollections(db, cat.State().Live); len(got) != 0 {
		t.Fatalf("orphans after cleanup: %v", got)
	}
}

// FuzzDecodeCollection checks that decoding a catalog record never panics, and that a record
// that decodes re-encodes to one that decodes to the same value.
func FuzzDecodeCollection(f *testing.F) {
	f.Add(encodeCollection(&Collection{ID: 1, DB: "d", Name: "c", Partitions: []Partition{{ID: 1}}, NextPartitionID: 2, NextIndexID: 1}))
	f.Add(encodeCollection(&Collection{ID: 7, DB: "d", Name: "c", ShardKey: bdoc("k", 1),
		Indexes:    []Index{{ID: 1, Name: IDIndexName, Key: idIndexKey}},
		Partitions: []Partition{{ID: 1}, {ID: 2, Lo: 1 << 63, Shard: 1}}, NextIndexID: 2, NextPartitionID: 3}))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := decodeCollection(raw)
		if err != nil {
			return
		}
		again, err := decodeCollection(encodeCollection(c))
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("re-decoding changed the record: %v\n%+v\n%+v", err, c, again)
		}
	})
}

func TestCatalogCreateCollectionGivenIDIndex(t *testing.T) {
	db := openMem(t)
	cat := openCatalog(t, db)
	c, err := cat.CreateCollection(Collection{DB: "d", Name: "c", Indexes: []Index{
		{Name: "x_1", Key: bdoc("x", 1)},
		{Name: IDIndexName, Key: idIndexKey, Spec: bdoc("collation", 1)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if x := c.Index(IDIndexName); x == nil || x.ID != IDIndexID || x.Spec == nil {
		t.Fatalf("_id index = %+v", x)
	}
	if x := c.Index("x_1"); x == nil || x.ID != 2 || c.NextIndexID != 3 {
		t.Fatalf("x_1 = %+v, next %d", x, c.NextIndexID)
	}
}

func TestCatalogCodecAutoscale(t *testing.T) {
	c := &Collection{ID: 7, DB: "d", Name: "c", UUID: newUUID(), CreatedAt: now(),
		Throughput: 40000, Autoscale: true,
		Indexes:     []Index{{ID: 1, Name: IDIndexName, Key: idIndexKey, Ready: true}},
		Partitions:  []Partition{{ID: 1}},
		NextIndexID: 2, NextPartitionID: 2}
	got, err := decodeCollection(encodeCollection(c))
	if err != nil || !got.Autoscale || got.Throughput != 40000 {
		t.Fatalf("autoscale round trip: %+v, %v", got, err)
	}
	// A record written before the field existed (none of them has it) decodes as manual.
	c.Autoscale = false
	raw := encodeCollection(c)
	if _, err := bsoncore.Document(raw).LookupErr("autoscale"); err == nil {
		t.Fatal("a manual collection's record holds an autoscale field")
	}
	if got, err := decodeCollection(raw); err != nil || got.Autoscale {
		t.Fatalf("old record: autoscale %v, %v", got.Autoscale, err)
	}
}

// TestCatalogCodecThroughputSettings: burst capacity (on, off or unset), custom budgets and
// the partitions' budgets survive the record's round trip; unset, they take no room.
func TestCatalogCodecThroughputSettings(t *testing.T) {
	for _, burst := range []Toggle{ToggleDefault, ToggleOn, ToggleOff} {
		c := &Collection{ID: 7, DB: "d", Name: "c", UUID: newUUID(), CreatedAt: now(),
			Throughput: 4000, BurstCapacity: burst, CustomBudgets: burst == ToggleOn,
			Indexes:     []Index{{ID: 1, Name: IDIndexName, Key: idIndexKey, Ready: true}},
			Partitions:  []Partition{{ID: 1, BudgetRU: 2500}, {ID: 2, Lo: 1 << 63}},
			NextIndexID: 2, NextPartitionID: 3}
		raw := encodeCollection(c)
		got, err := decodeCollection(raw)
		if err != nil || got.BurstCapacity != burst || got.CustomBudgets != c.CustomBudgets ||
			got.Partitions[0].BudgetRU != 2500 || got.Partitions[1].BudgetRU != 0 {
			t.Fatalf("round trip of %v: %+v, %v", burst, got, err)
		}
		if _, err := bsoncore.Document(raw).LookupErr("burstCapacity"); (err == nil) != (burst != ToggleDefault) {
			t.Fatalf("burstCapacity %v stored: %v", burst, err == nil)
		}
	}
	if !ToggleDefault.Resolve(true) || ToggleOff.Resolve(true) || !ToggleOn.Resolve(false) {
		t.Fatal("Toggle.Resolve")
	}
}

// TestCreateReshardCopyOnePerCollection: a second copy of one collection's layout change is
// refused (ErrReshardRunning), in the same change that would create it, so two nodes never
// both start one; another collection's is not.
func TestCreateReshardCopyOnePerCollection(t *testing.T) {
	cat := openCatalog(t, openMem(t))
	if _, err := cat.CreateCollection(Collection{DB: "d", Name: "system.resharding.1", ReshardNode: "node-a", ReshardOf: "events"}); err != nil {
		t.Fatal(err)
	}
	_, err := cat.CreateCollection(Collection{DB: "d", Name: "system.resharding.2", ReshardNode: "node-b", ReshardOf: "events"})
	if !errors.Is(err, ErrReshardRunning) {
		t.Fatalf("a second copy of d.events = %v, want ErrReshardRunning", err)
	}
	if _, err := cat.CreateCollection(Collection{DB: "d", Name: "system.resharding.3", ReshardNode: "node-b", ReshardOf: "other"}); err != nil {
		t.Fatalf("the copy of another collection: %v", err)
	}
}
