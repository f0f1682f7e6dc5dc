package integration

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestChangeStreamCreateEvents checks that a stream with showExpandedEvents reports every
// creation of a collection, as MongoDB 6.0+ does: the implicit ones (a first insert,
// createIndexes and shardCollection on a new collection) as well as create, each before the
// events of what follows on the collection; a stream without it sees only the writes.
func TestChangeStreamCreateEvents(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	client := srv.client(t)
	db := client.Database("cs_create")
	expanded, err := db.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetShowExpandedEvents(true))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = expanded.Close(ctx) }()
	plain, err := db.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plain.Close(ctx) }()

	if _, err := db.Collection("a").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("b").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	shardCmd := bson.D{{Key: "shardCollection", Value: "cs_create.d"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}
	if err := client.Database("admin").RunCommand(ctx, shardCmd).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("a").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}

	type ev struct {
		Op string `bson:"operationType"`
		NS struct {
			Coll string `bson:"coll"`
		} `bson:"ns"`
	}
	read := func(cs *mongo.ChangeStream, n int) []string {
		t.Helper()
		var out []string
		for range n {
			if !cs.Next(ctx) {
				t.Fatalf("after %v: %v", out, cs.Err())
			}
			var e ev
			if err := cs.Decode(&e); err != nil {
				t.Fatal(err)
			}
			out = append(out, e.Op+" "+e.NS.Coll)
		}
		return out
	}
	want := []string{"create a", "insert a", "create b", "createIndexes b", "create c", "create d", "shardCollection d", "insert a"}
	if got := read(expanded, len(want)); !slices.Equal(got, want) {
		t.Errorf("expanded events %v, want %v", got, want)
	}
	if got := read(plain, 2); !slices.Equal(got, []string{"insert a", "insert a"}) {
		t.Errorf("plain events %v, want the two inserts", got)
	}
}

// TestChangeStreamModifyEvent checks a collMod's modify event as MongoDB's oplog entry makes
// it: operationDescription is the command's arguments, the index argument replaced by the
// index's name and new values; stateBeforeChange has the collection's options and the index's
// old values.
func TestChangeStreamModifyEvent(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := context.Background()
	db := srv.client(t).Database("cs_modify")
	if _, err := db.Collection("c").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(100)}); err != nil {
		t.Fatal(err)
	}
	cs, err := db.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetShowExpandedEvents(true))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	for _, cmd := range []bson.D{
		{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "a", Value: 1}}},
			{Key: "expireAfterSeconds", Value: 200}}}},
		{{Key: "collMod", Value: "c"}, {Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: true}}}}},
			{Key: "comment", Value: "generic arguments are left out"}},
	} {
		if err := db.RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	want := []string{
		`{"operationType": "modify","operationDescription": {"index": {"name": "a_1","expireAfterSeconds": {"$numberLong":"200"}}},` +
			`"stateBeforeChange": {"collectionOptions": {},"indexOptions": {"expireAfterSeconds": {"$numberLong":"100"}}}}`,
		`{"operationType": "modify","operationDescription": {"validator": {"a": {"$exists": true}}},` +
			`"stateBeforeChange": {"collectionOptions": {}}}`,
	}
	for i, w := range want {
		if !cs.Next(ctx) {
			t.Fatalf("event %d: %v", i, cs.Err())
		}
		got := bson.D{}
		for _, k := range []string{"operationType", "operationDescription", "stateBeforeChange"} {
			if v, err := cs.Current.LookupErr(k); err == nil {
				got = append(got, bson.E{Key: k, Value: v})
			}
		}
		ext, err := bson.MarshalExtJSON(got, true, false)
		if err != nil {
			t.Fatal(err)
		}
		var wantDoc bson.D
		if err := bson.UnmarshalExtJSON([]byte(w), true, &wantDoc); err != nil {
			t.Fatal(err)
		}
		wantExt, err := bson.MarshalExtJSON(wantDoc, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if string(ext) != string(wantExt) { // canonical: types compared too
			t.Errorf("event %d:\n got %s\nwant %s", i, ext, wantExt)
		}
	}
}
