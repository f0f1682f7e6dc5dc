package integration

import (
	"context"
	"math"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// dumpTypesDocs are documents of every BSON type a dump must carry unchanged.
func dumpTypesDocs() []any {
	dec, _ := bson.ParseDecimal128("1234.5678901234567890123456789012")
	oid, _ := bson.ObjectIDFromHex("65a1b2c3d4e5f60718293a4b")
	return []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "i32", Value: int32(-7)}, {Key: "i64", Value: int64(1) << 60}, {Key: "f", Value: 2.5},
			{Key: "dec", Value: dec}, {Key: "s", Value: "héllo"}, {Key: "b", Value: true}, {Key: "n", Value: nil}},
		bson.D{{Key: "_id", Value: 2}, {Key: "date", Value: bson.DateTime(1700000000123)}, {Key: "ts", Value: bson.Timestamp{T: 17, I: 3}},
			{Key: "oid", Value: oid}, {Key: "re", Value: bson.Regex{Pattern: "^a.b", Options: "im"}},
			{Key: "min", Value: bson.MinKey{}}, {Key: "max", Value: bson.MaxKey{}}, {Key: "js", Value: bson.JavaScript("x+1")}},
		bson.D{{Key: "_id", Value: 3}, {Key: "bin0", Value: bson.Binary{Subtype: 0, Data: []byte{0, 1, 2}}},
			{Key: "uuid", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}, {Key: "user", Value: bson.Binary{Subtype: 0x80, Data: []byte("x")}},
			{Key: "nested", Value: bson.A{bson.A{1, bson.A{2, 3}}, bson.D{{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: int64(4)}}}}}}}},
		bson.D{{Key: "_id", Value: "str-id"}, {Key: "neg0", Value: math.Copysign(0, -1)}, {Key: "empty", Value: bson.D{}}, {Key: "arr", Value: bson.A{}}},
	}
}

// populateDumpDB creates collections with options, indexes, a shard key and a view in db.
func populateDumpDB(t *testing.T, c *mongo.Client, db string) {
	t.Helper()
	ctx := context.Background()
	d := c.Database(db)
	run := func(cmd bson.D) {
		t.Helper()
		if err := d.RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatalf("%v: %v", cmd[0].Key, err)
		}
	}
	run(bson.D{{Key: "create", Value: "capped"}, {Key: "capped", Value: true}, {Key: "size", Value: int64(1 << 20)}, {Key: "max", Value: int64(100)}})
	run(bson.D{{Key: "create", Value: "validated"}, {Key: "validator", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$type", Value: "int"}}}}},
		{Key: "validationLevel", Value: "moderate"}})
	run(bson.D{{Key: "create", Value: "collated"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}, {Key: "strength", Value: int32(2)}}}})
	if _, err := d.Collection("types").InsertMany(ctx, dumpTypesDocs()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Collection("capped").InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Collection("validated").InsertOne(ctx, bson.D{{Key: "x", Value: int32(1)}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: db + ".sharded"},
		{Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	var many []any
	for i := range 300 {
		many = append(many, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i * 7}, {Key: "email", Value: "u" + string(rune('a'+i%26)) + string(rune('0'+i/26))}})
	}
	if _, err := d.Collection("sharded").InsertMany(ctx, many); err != nil {
		t.Fatal(err)
	}
	_, err := d.Collection("types").Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "s", Value: 1}}, Options: options.Index().SetUnique(true).SetSparse(true).SetName("s_unique")},
		{Keys: bson.D{{Key: "i32", Value: -1}, {Key: "f", Value: 1}}, Options: options.Index().SetPartialFilterExpression(bson.D{{Key: "f", Value: bson.D{{Key: "$gt", Value: 1}}}})},
		{Keys: bson.D{{Key: "date", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(3600)},
		{Keys: bson.D{{Key: "s", Value: 1}, {Key: "b", Value: 1}}, Options: options.Index().SetCollation(&options.Collation{Locale: "en", Strength: 1})},
	})
	if err != nil {
		t.Fatal(err)
	}
	run(bson.D{{Key: "create", Value: "view"}, {Key: "viewOn", Value: "types"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "b", Value: true}}}}}}})
}

// dumpSnapshot is what a dump must carry of a database: every collection's documents (raw,
// by _id), its options, indexes and shard key, and the views.
type dumpSnapshot struct {
	docs    map[string][]string
	specs   map[string]bson.Raw
	indexes map[string][]string
	keys    map[string]string
}

// snapshotDB reads db's state for comparison.
func snapshotDB(t *testing.T, c *mongo.Client, db string) dumpSnapshot {
	t.Helper()
	ctx := context.Background()
	s := dumpSnapshot{docs: map[string][]string{}, specs: map[string]bson.Raw{}, indexes: map[string][]string{}, keys: map[string]string{}}
	cur, err := c.Database(db).ListCollections(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for cur.Next(ctx) {
		name := cur.Current.Lookup("name").StringValue()
		opts, _ := cur.Current.Lookup("options").DocumentOK()
		s.specs[name] = opts
		if cur.Current.Lookup("type").StringValue() == "view" {
			continue
		}
		coll := c.Database(db).Collection(name)
		dc, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		for dc.Next(ctx) {
			s.docs[name] = append(s.docs[name], string(dc.Current))
		}
		ic, err := coll.Indexes().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for ic.Next(ctx) {
			s.indexes[name] = append(s.indexes[name], ic.Current.String())
		}
		slices.Sort(s.indexes[name])
		var meta bson.Raw
		if c.Database("config").Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: db + "." + name}}).Decode(&meta) == nil {
			s.keys[name] = meta.Lookup("key").String()
		}
	}
	return s
}

// TestDumpLoadRoundTrip dumps a database with `cleave dump` in each layout, drops it, loads
// it back with `cleave load` and checks that documents (byte for byte), options, indexes,
// shard keys and views are what they were.
func TestDumpLoadRoundTrip(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--shards", "2")
	c := s.client(t)
	for _, mode := range []struct {
		name       string
		dump, load func(dir string) []string
	}{
		{"Directory", func(dir string) []string { return []string{"--out", dir} }, func(dir string) []string { return []string{dir} }},
		{"DirectoryGzip", func(dir string) []string { return []string{"--out", dir, "--gzip"} }, func(dir string) []string { return []string{"--gzip", dir} }},
		{"Archive", func(dir string) []string { return []string{"--archive=" + filepath.Join(dir, "a")} },
			func(dir string) []string { return []string{"--archive=" + filepath.Join(dir, "a")} }},
		{"ArchiveGzip", func(dir string) []string { return []string{"--archive=" + filepath.Join(dir, "a.gz"), "--gzip"} },
			func(dir string) []string { return []string{"--gzip", "--archive=" + filepath.Join(dir, "a.gz")} }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			db := dbName(t)
			populateDumpDB(t, c, db)
			before := snapshotDB(t, c, db)
			if before.keys["sharded"] == "" || before.specs["view"] == nil || len(before.indexes["types"]) != 5 {
				t.Fatalf("the fixture lacks a shard key, the view or indexes: %+v", before)
			}
			dir := t.TempDir()
			runTool(t, append([]string{"dump", "--uri", s.uri(), "--db", db}, mode.dump(dir)...)...)
			if err := c.Database(db).Drop(context.Background()); err != nil {
				t.Fatal(err)
			}
			out := runTool(t, append([]string{"load", "--uri", s.uri()}, mode.load(dir)...)...)
			t.Logf("load:\n%s", out)
			after := snapshotDB(t, c, db)
			compareSnapshots(t, before, after)
		})
	}
}

// compareSnapshots reports every difference between two snapshots of a database.
func compareSnapshots(t *testing.T, before, after dumpSnapshot) {
	t.Helper()
	for name, docs := range before.docs {
		if !reflect.DeepEqual(docs, after.docs[name]) {
			t.Errorf("%s: documents differ:\nbefore %d %q\nafter  %d %q", name, len(docs), docs, len(after.docs[name]), after.docs[name])
		}
	}
	for name, spec := range before.specs {
		if after.specs[name].String() != spec.String() {
			t.Errorf("%s: options %s, were %s", name, after.specs[name], spec)
		}
	}
	if len(after.specs) != len(before.specs) {
		t.Errorf("collections %v, were %v", slices.Sorted(mapKeys(after.specs)), slices.Sorted(mapKeys(before.specs)))
	}
	if !reflect.DeepEqual(before.indexes, after.indexes) {
		t.Errorf("indexes differ:\nbefore %v\nafter  %v", before.indexes, after.indexes)
	}
	if !reflect.DeepEqual(before.keys, after.keys) {
		t.Errorf("shard keys differ:\nbefore %v\nafter  %v", before.keys, after.keys)
	}
}

// mapKeys iterates a map's keys.
func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// runTool runs `cleave args...`, failing the test when it fails, and returns its output.
func runTool(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("cleave %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestDumpLoadRenames loads a dump of a database under another name (--nsFrom, --nsTo, as
// mongorestore): the copy holds the same documents, options, indexes, shard keys and view,
// and the original stays as it was.
func TestDumpLoadRenames(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--shards", "2")
	c := s.client(t)
	db := dbName(t)
	populateDumpDB(t, c, db)
	before := snapshotDB(t, c, db)
	dir := t.TempDir()
	runTool(t, "dump", "--uri", s.uri(), "--db", db, "--out", dir)
	out := runTool(t, "load", "--uri", s.uri(), "--nsFrom", db+".*", "--nsTo", "copy_"+db+".*", dir)
	t.Logf("load:\n%s", out)
	compareSnapshots(t, before, snapshotDB(t, c, "copy_"+db))
	compareSnapshots(t, before, snapshotDB(t, c, db))
}
