package integration

import (
	"context"
	"os"
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
