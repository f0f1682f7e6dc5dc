package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Helpers of the update, delete and findAndModify tests (crud_update_test.go,
// crud_delete_test.go, fam_test.go), prefixed wr so as not to collide with other suites'.

// wrColl returns a fresh collection of the test's database on the shared server, seeded
// with docs (Extended JSON documents).
func wrColl(t *testing.T, name string, docs ...string) *mongo.Collection {
	t.Helper()
	c := sharedServer(t).client(t).Database(dbName(t)).Collection(name)
	if len(docs) == 0 {
		return c
	}
	vals := make([]any, len(docs))
	for i, d := range docs {
		vals[i] = wrJSON(t, d)
	}
	if _, err := c.InsertMany(context.Background(), vals); err != nil {
		t.Fatalf("seeding %s: %v", name, err)
	}
	return c
}

// wrJSON parses a wrCanonical or relaxed Extended JSON document.
func wrJSON(t testing.TB, s string) bson.D {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return d
}

// wrCanonical renders v as wrCanonical Extended JSON, which keeps int32, int64 and double
// distinct, so that comparisons check types and field order. A reply (bson.D) loses its
// volatile fields, $clusterTime and operationTime, which change from run to run.
func wrCanonical(t testing.TB, v any) string {
	t.Helper()
	if d, ok := v.(bson.D); ok { // a reply: without the fields that change from run to run
		d = slices.DeleteFunc(slices.Clone(d), func(e bson.E) bool { return e.Key == "$clusterTime" || e.Key == "operationTime" })
		v = d
	}
	b, err := bson.MarshalExtJSON(v, true, false)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	return string(b)
}

// wrCheckDocs compares the collection's documents, in _id order, with want (Extended JSON).
func wrCheckDocs(t *testing.T, c *mongo.Collection, want ...string) {
	t.Helper()
	// NB: sorted here, not with find's sort, which does not test find.
	cur, err := c.Find(context.Background(), bson.D{})
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	var got []bson.D
	if err := cur.All(context.Background(), &got); err != nil {
		t.Fatalf("find: %v", err)
	}
	sort.SliceStable(got, func(i, j int) bool { return wrIDLess(got[i][0].Value, got[j][0].Value) })
	if len(got) != len(want) {
		t.Fatalf("collection holds %d documents, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if g, w := wrCanonical(t, got[i]), wrCanonical(t, wrJSON(t, want[i])); g != w {
			t.Errorf("document %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

// wrIDLess orders the _id values the tests use: numbers, then strings, then ObjectIds.
func wrIDLess(a, b any) bool {
	rank := func(v any) (int, float64, string) {
		switch x := v.(type) {
		case int32:
			return 0, float64(x), ""
		case int64:
			return 0, float64(x), ""
		case float64:
			return 0, x, ""
		case string:
			return 1, 0, x
		case bson.ObjectID:
			return 2, 0, x.Hex()
		}
		return 3, 0, fmt.Sprint(v)
	}
	ra, na, sa := rank(a)
	rb, nb, sb := rank(b)
	if ra != rb {
		return ra < rb
	}
	if na != nb {
		return na < nb
	}
	return sa < sb
}

// wrRun runs a command and decodes its reply; a command error fails the test.
func wrRun(t *testing.T, db *mongo.Database, cmd bson.D) bson.M {
	t.Helper()
	var out bson.M
	err := db.RunCommand(context.Background(), cmd).Decode(&out)
	var we mongo.WriteException
	if errors.As(err, &we) && we.Raw != nil {
		// The driver turns writeErrors into an error; the reply is still ok: 1.
		err = bson.Unmarshal(we.Raw, &out)
	}
	if err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return out
}

// wrCmdError runs a command that must fail and returns its error.
func wrCmdError(t *testing.T, db *mongo.Database, cmd bson.D) mongo.CommandError {
	t.Helper()
	err := db.RunCommand(context.Background(), cmd).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("%v: err = %v, want a command error", cmd, err)
	}
	return ce
}

// wrFirstWriteError returns writeErrors[0] of a write command's reply.
func wrFirstWriteError(t *testing.T, reply bson.M) bson.M {
	t.Helper()
	wes, ok := reply["writeErrors"].(bson.A)
	if !ok || len(wes) == 0 {
		t.Fatalf("reply has no writeErrors: %v", reply)
	}
	b, err := bson.Marshal(wes[0])
	if err != nil {
		t.Fatal(err)
	}
	var we bson.M
	if err := bson.Unmarshal(b, &we); err != nil {
		t.Fatal(err)
	}
	return we
}

// wrManyDocs returns n documents {_id: i, i: i}.
func wrManyDocs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = `{"_id": ` + wrItoa(i) + `, "i": ` + wrItoa(i) + `}`
	}
	return out
}

// wrItoa formats i.
func wrItoa(i int) string { return strconv.Itoa(i) }

// wrUniqueIndex creates a unique index on field, or skips the test while createIndexes
// does not exist.
func wrUniqueIndex(t *testing.T, c *mongo.Collection, field string) {
	t.Helper()
	_, err := c.Indexes().CreateOne(context.Background(), mongo.IndexModel{
		Keys: bson.D{{Key: field, Value: 1}}, Options: options.Index().SetUnique(true)})
	var ce mongo.CommandError
	if errors.As(err, &ce) && ce.Code == 59 {
		t.Skip("createIndexes is not implemented")
	}
	if err != nil {
		t.Fatalf("createIndexes: %v", err)
	}
}
