package dump

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc64"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// mongodumpMetadata is a .metadata.json as mongodump 100.x writes it for a collection with a
// unique index (canonical Extended JSON, one line).
const mongodumpMetadata = `{"indexes":[{"v":{"$numberInt":"2"},"key":{"_id":{"$numberInt":"1"}},"name":"_id_"},` +
	`{"v":{"$numberInt":"2"},"key":{"email":{"$numberInt":"1"}},"name":"email_1","unique":true}],` +
	`"uuid":"0b8f2c1d9e3a4b5c8d7e6f5a4b3c2d1e","collectionName":"a b","type":"collection"}`

// mongodumpView is a view's .metadata.json.
const mongodumpView = `{"options":{"viewOn":"a b","pipeline":[{"$match":{"x":{"$numberInt":"1"}}}]},"indexes":[],` +
	`"collectionName":"v","type":"view"}`

// fixtureDocs are the documents of the fixture's collection.
func fixtureDocs() [][]byte {
	return [][]byte{
		bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("email", "a@x").Build(),
		bsoncore.NewDocumentBuilder().AppendInt32("_id", 2).AppendDecimal128("d", 1, 2).AppendDateTime("t", 1700000000000).Build(),
	}
}

// writeGz writes data to name, gzipped.
func writeGz(t *testing.T, name string, data []byte) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(data)
	_ = zw.Close()
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loaded is what a source yields, for comparison.
type loaded struct {
	entries map[string]Metadata
	docs    map[string][][]byte
	ends    []string
}

// drain reads every entry and document of src.
func drain(t *testing.T, src source) loaded {
	t.Helper()
	l := loaded{entries: map[string]Metadata{}, docs: map[string][][]byte{}}
	for _, e := range src.entries() {
		l.entries[e.ns()] = e.meta
	}
	err := src.documents(func(string) bool { return true },
		func(ns string, d []byte) error { l.docs[ns] = append(l.docs[ns], d); return nil },
		func(ns string) error { l.ends = append(l.ends, ns); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkFixture checks what a source read from the fixture.
func checkFixture(t *testing.T, l loaded) {
	t.Helper()
	m, ok := l.entries["shop.a b"]
	if !ok || m.CollectionName != "a b" || len(m.Indexes) != 2 || m.UUID != "0b8f2c1d9e3a4b5c8d7e6f5a4b3c2d1e" {
		t.Fatalf("entries %+v", l.entries)
	}
	specs := m.indexesToCreate()
	want := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "email", Value: int32(1)}}}, {Key: "name", Value: "email_1"}, {Key: "unique", Value: true}}
	if len(specs) != 1 || !reflect.DeepEqual(specs[0], want) {
		t.Errorf("indexes to create %v, want [%v]", specs, want)
	}
	if v := l.entries["shop.v"]; v.Type != "view" || v.Options[0].Value != "a b" {
		t.Errorf("view %+v", v)
	}
	if !reflect.DeepEqual(l.docs["shop.a b"], fixtureDocs()) {
		t.Errorf("documents %x", l.docs["shop.a b"])
	}
	if !reflect.DeepEqual(l.ends, []string{"shop.a b"}) {
		t.Errorf("ends %v", l.ends)
	}
}

// TestLoadReadsMongodumpDirectory reads a directory laid out as mongodump writes it, plain
// and gzipped: escaped file names, canonical metadata, a view with metadata only.
func TestLoadReadsMongodumpDirectory(t *testing.T) {
	for _, gz := range []bool{false, true} {
		root := t.TempDir()
		dir := filepath.Join(root, "shop")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{
			"a+b.metadata.json": []byte(mongodumpMetadata),
			"a+b.bson":          bytes.Join(fixtureDocs(), nil),
			"v.metadata.json":   []byte(mongodumpView),
		}
		for name, data := range files {
			if gz {
				writeGz(t, filepath.Join(dir, name+".gz"), data)
			} else if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		src, err := readDir(root, "")
		if err != nil {
			t.Fatal(err)
		}
		checkFixture(t, drain(t, src))
	}
}

// TestLoadReadsMongodumpArchive reads an archive assembled byte by byte from the format's
// spec, as mongodump --archive (and --gzip) writes it.
func TestLoadReadsMongodumpArchive(t *testing.T) {
	le := binary.LittleEndian
	ns := func(eof bool, crc uint64) []byte {
		return bsoncore.NewDocumentBuilder().AppendString("db", "shop").AppendString("collection", "a b").
			AppendBoolean("EOF", eof).AppendInt64("CRC", int64(crc)).Build()
	}
	b := le.AppendUint32(nil, 0x8199e26d)
	b = append(b, bsoncore.NewDocumentBuilder().AppendInt32("concurrent_collections", 4).AppendString("version", "0.1").
		AppendString("server_version", "7.0.5").AppendString("tool_version", "100.9.4").Build()...)
	for _, m := range []struct{ coll, meta, typ string }{{"a b", mongodumpMetadata, ""}, {"v", mongodumpView, "view"}} {
		b = append(b, bsoncore.NewDocumentBuilder().AppendString("db", "shop").AppendString("collection", m.coll).
			AppendString("metadata", m.meta).AppendInt32("size", 0).AppendString("type", m.typ).Build()...)
	}
	b = le.AppendUint32(b, 0xffffffff)
	crc := crc64.New(crc64.MakeTable(crc64.ECMA))
	for _, d := range fixtureDocs() { // one segment per document, as a busy mongodump interleaves
		b = append(append(b, ns(false, 0)...), d...)
		b = le.AppendUint32(b, 0xffffffff)
		_, _ = crc.Write(d)
	}
	b = le.AppendUint32(append(b, ns(true, crc.Sum64())...), 0xffffffff)
	for _, gz := range []bool{false, true} {
		in := b
		if gz {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			_, _ = zw.Write(b)
			_ = zw.Close()
			in = z.Bytes()
		}
		src, err := readArchive(bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		checkFixture(t, drain(t, src))
	}
}

// TestDumpFileNames pins mongodump's escaping of collection names in file names.
func TestDumpFileNames(t *testing.T) {
	for coll, want := range map[string]string{"users": "users", "a b": "a+b", "x/y": "x%2Fy", "c$d": "c%24d"} {
		if got := fileName(coll); got != want {
			t.Errorf("fileName(%q) = %q, want %q", coll, got, want)
		}
		if back := collName(fileName(coll)); back != coll {
			t.Errorf("collName(%q) = %q, want %q", fileName(coll), back, coll)
		}
	}
	long := string(bytes.Repeat([]byte("n"), 300))
	if got := fileName(long); len(got) != 208+3+27 {
		t.Errorf("a 300-byte name gives %d bytes, want 238", len(got))
	}
}

// TestFilterNamespaces pins --nsInclude and --nsExclude.
func TestFilterNamespaces(t *testing.T) {
	f := Filter{Include: []string{"shop.*", "*.users"}, Exclude: []string{"shop.tmp*"}}
	for ns, want := range map[string]bool{"shop.a": true, "shop.a.b": true, "crm.users": true, "crm.x": false, "shop.tmp1": false} {
		if got := f.Match(ns); got != want {
			t.Errorf("Match(%q) = %v, want %v", ns, got, want)
		}
	}
}

// TestRenameNamespaces pins --nsFrom and --nsTo: stars by rank, $variables$ by name, the
// first matching pair, and the refusals.
func TestRenameNamespaces(t *testing.T) {
	r := Rename{From: []string{"shop.*", "$db$.log_$day$", "a.b*c*", "$d$.twice"}, To: []string{"shop_test.*", "logs_$db$.$day$", "x.*_*", "$d$.$d$"}}
	rs, err := r.compile()
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]string{
		"shop.orders": "shop_test.orders", "shop.a.b": "shop_test.a.b", "app.log_0501": "logs_app.0501",
		"a.b1c2": "x.1_2", "crm.users": "crm.users", "sh.op": "sh.op", "k.twice": "k.k",
	} {
		if got := apply(rs, ns); got != want {
			t.Errorf("apply(%q) = %q, want %q", ns, got, want)
		}
	}
	for _, bad := range []Rename{
		{From: []string{"a.*"}},
		{From: []string{"a.b"}, To: []string{"a.*"}},
		{From: []string{"a.*"}, To: []string{"$x$.*"}},
		{From: []string{"$db.*"}, To: []string{"x.*"}},
		{From: []string{"$d$.$d$"}, To: []string{"x.$d$"}},
	} {
		if _, err := bad.compile(); err == nil {
			t.Errorf("compile(%+v): no error", bad)
		}
	}
}

// TestDumpMetadataJSON pins the .metadata.json a dump writes: mongodump's fields and order,
// canonical numbers, and cleave's shardKey after them.
func TestDumpMetadataJSON(t *testing.T) {
	m := Metadata{
		Options:        bson.D{{Key: "capped", Value: true}, {Key: "size", Value: int64(4096)}},
		Indexes:        []bson.D{{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}}},
		UUID:           "0b8f2c1d9e3a4b5c8d7e6f5a4b3c2d1e",
		CollectionName: "c",
		ShardKey:       bson.D{{Key: "k", Value: "hashed"}},
	}
	got, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"options":{"capped":true,"size":{"$numberLong":"4096"}},"indexes":[{"v":{"$numberInt":"2"},"key":{"_id":{"$numberInt":"1"}},"name":"_id_"}],` +
		`"uuid":"0b8f2c1d9e3a4b5c8d7e6f5a4b3c2d1e","collectionName":"c","shardKey":{"k":"hashed"}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	back, err := parseMetadata(got, "test")
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Errorf("parse back: %+v, %v", back, err)
	}
	if empty, _ := (&Metadata{CollectionName: "e"}).MarshalJSON(); string(empty) != `{"indexes":[],"collectionName":"e"}` {
		t.Errorf("no indexes: %s", empty)
	}
}
