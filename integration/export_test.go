package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// collDocs reads a collection's documents, raw, in _id order.
func collDocs(t *testing.T, c *mongo.Collection) []string {
	t.Helper()
	cur, err := c.Find(context.Background(), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for cur.Next(context.Background()) {
		out = append(out, cur.Current.String())
	}
	return out
}

// TestExportImportRoundTrip exports a collection of every BSON type with `cleave export`
// and imports it into another with `cleave import`: canonical Extended JSON, per line and as
// an array, gives the documents back exactly.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	s := sharedServer(t)
	c := s.client(t)
	db := dbName(t)
	src := c.Database(db).Collection("src")
	if _, err := src.InsertMany(context.Background(), dumpTypesDocs()); err != nil {
		t.Fatal(err)
	}
	want := collDocs(t, src)
	for _, mode := range []struct {
		name string
		args []string
	}{{"Lines", nil}, {"Array", []string{"--jsonArray"}}} {
		file := filepath.Join(t.TempDir(), "out.json")
		runTool(t, append([]string{"export", "--uri", s.uri(), "--db", db, "--collection", "src", "--jsonFormat", "canonical", "--out", file}, mode.args...)...)
		out := runTool(t, append([]string{"import", "--uri", s.uri(), "--db", db, "--collection", "dst" + mode.name, "--file", file}, mode.args...)...)
		if !strings.Contains(out, "4 document(s) imported successfully. 0 document(s) failed") {
			t.Errorf("%s: import said %s", mode.name, out)
		}
		if got := collDocs(t, c.Database(db).Collection("dst"+mode.name)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: documents differ:\n got %q\nwant %q", mode.name, got, want)
		}
	}
}

// TestImportModesAndBadLines imports relaxed Extended JSON with a malformed line (reported
// by number, the rest imported), then upserts and merges over it by a field of its own, and
// round-trips CSV with a header line.
func TestImportModesAndBadLines(t *testing.T) {
	t.Parallel()
	s := sharedServer(t)
	c := s.client(t)
	db := dbName(t)
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	imp := func(file string, args ...string) string {
		return runTool(t, append(append([]string{"import", "--uri", s.uri(), "--db", db, "--collection", "p"}, args...), file)...)
	}
	out := imp(write("a.json", "{\"_id\":1,\"sku\":\"a\",\"n\":1,\"x\":1}\n{\"_id\":2,\n{\"_id\":3,\"sku\":\"c\",\"n\":3}\n{\"_id\":1}\n"))
	if !strings.Contains(out, "line 2:") || !strings.Contains(out, "line 4: refused") || !strings.Contains(out, "2 document(s) imported successfully. 2 document(s) failed") {
		t.Errorf("insert said:\n%s", out)
	}
	imp(write("b.json", "{\"sku\":\"a\",\"n\":10}\n{\"sku\":\"d\",\"_id\":4,\"n\":4}\n"), "--mode", "upsert", "--upsertFields", "sku")
	imp(write("c.json", "{\"sku\":\"c\",\"m\":30}\n"), "--mode", "merge", "--upsertFields", "sku")
	got := collDocs(t, c.Database(db).Collection("p"))
	want := []string{`{"_id": {"$numberInt":"1"},"sku": "a","n": {"$numberInt":"10"}}`, `{"_id": {"$numberInt":"3"},"sku": "c","n": {"$numberInt":"3"},"m": {"$numberInt":"30"}}`,
		`{"_id": {"$numberInt":"4"},"sku": "d","n": {"$numberInt":"4"}}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after upsert and merge:\n got %q\nwant %q", got, want)
	}
	csvFile := filepath.Join(dir, "p.csv")
	runTool(t, "export", "--uri", s.uri(), "--db", db, "--collection", "p", "--type", "csv", "--fields", "_id,sku,n,m", "--out", csvFile)
	data, _ := os.ReadFile(csvFile)
	if string(data) != "_id,sku,n,m\n1,a,10,\n3,c,3,30\n4,d,4,\n" {
		t.Errorf("CSV export:\n%s", data)
	}
	runTool(t, "import", "--uri", s.uri(), "--db", db, "--collection", "q", "--type", "csv", "--headerline", "--ignoreBlanks", csvFile)
	if got := collDocs(t, c.Database(db).Collection("q")); !reflect.DeepEqual(got, want) {
		t.Errorf("CSV round trip:\n got %q\nwant %q", got, want)
	}
}

// TestImportRelaxedShardedParallel exports 6,000 documents of the types relaxed Extended
// JSON keeps exact (int32, double, string, bool, null, ObjectId, date, nested documents and
// arrays) from a collection sharded over two shards, and imports them into another with
// several parsers and writers: the fast scanner's path through the real binary, over many
// chunks of lines, gives the documents back exactly.
func TestImportRelaxedShardedParallel(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--shards", "2")
	c := s.client(t)
	db := dbName(t)
	ctx := context.Background()
	for _, coll := range []string{"src", "dst"} {
		if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: db + "." + coll}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	docs := make([]any, 6000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "k", Value: int32(i)}, {Key: "f", Value: float64(i) + 0.25},
			{Key: "s", Value: strings.Repeat("é\"\\/\t", i%7)}, {Key: "b", Value: i%2 == 0}, {Key: "n", Value: nil},
			{Key: "at", Value: bson.DateTime(1704164645123 + int64(i))}, {Key: "sub", Value: bson.D{{Key: "a", Value: bson.A{int32(i), "x", bson.D{}}}}}}
	}
	if _, err := c.Database(db).Collection("src").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "src.json")
	runTool(t, "export", "--uri", s.uri(), "--db", db, "--collection", "src", "--out", file)
	out := runTool(t, "import", "--uri", s.uri(), "--db", db, "--collection", "dst", "--numDecodingWorkers", "3", "--numInsertionWorkers", "3", file)
	if !strings.Contains(out, "6000 document(s) imported successfully. 0 document(s) failed") {
		t.Errorf("import said %s", out)
	}
	if got, want := collDocs(t, c.Database(db).Collection("dst")), collDocs(t, c.Database(db).Collection("src")); !reflect.DeepEqual(got, want) {
		t.Errorf("documents differ: %d imported, %d exported", len(got), len(want))
	}
}

// TestImportMaintainInsertionOrderStops imports lines whose sixth repeats the second's
// _id: unordered, every other line is written; with --maintainInsertionOrder (one writer,
// ordered batches, as mongoimport) the import stops there with exit code 1, having written
// the five lines before it and none after.
func TestImportMaintainInsertionOrderStops(t *testing.T) {
	t.Parallel()
	s := sharedServer(t)
	c := s.client(t)
	db := dbName(t)
	var in strings.Builder
	for _, id := range []int{1, 2, 3, 4, 5, 2, 7, 8, 9, 10} {
		fmt.Fprintf(&in, "{\"_id\":%d}\n", id)
	}
	file := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(file, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runTool(t, "import", "--uri", s.uri(), "--db", db, "--collection", "unordered", file)
	if !strings.Contains(out, "line 6: refused") || !strings.Contains(out, "9 document(s) imported successfully. 1 document(s) failed") {
		t.Errorf("unordered import said %s", out)
	}
	cmd := exec.Command(binary, "import", "--uri", s.uri(), "--db", db, "--collection", "ordered", "--maintainInsertionOrder", file)
	outb, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("ordered import: %v, want exit code 1\n%s", err, outb)
	}
	if !strings.Contains(string(outb), "5 document(s) imported successfully. 1 document(s) failed") || !strings.Contains(string(outb), "line 6: refused") {
		t.Errorf("ordered import said %s", outb)
	}
	got := collDocs(t, c.Database(db).Collection("ordered"))
	if len(got) != 5 || got[4] != `{"_id": {"$numberInt":"5"}}` {
		t.Errorf("ordered import wrote %q, want _id 1 to 5", got)
	}
}
