package integration

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// idsOf runs a find and returns the _ids it returns, sorted by _id.
func idsOf(t *testing.T, coll *mongo.Collection, filter bson.D, c *options.Collation) []string {
	t.Helper()
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})
	if c != nil {
		opts.SetCollation(c)
	}
	cur, err := coll.Find(context.Background(), filter, opts)
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, d := range docs {
		out = append(out, d.ID)
	}
	return out
}

// collationOf returns the collation of an index spec, nil when it has none.
func collationOf(spec any) bson.M {
	return asM(asM(spec)["collation"])
}

// wantIDDup checks that err is one E11000 on the collated _id index for _id id.
func wantIDDup(t *testing.T, what string, err error, id string) {
	t.Helper()
	var we mongo.BulkWriteException
	var e mongo.WriteError
	switch {
	case errors.As(err, &we) && len(we.WriteErrors) == 1:
		e = we.WriteErrors[0].WriteError
	case errors.As(err, new(mongo.WriteException)):
		var wx mongo.WriteException
		errors.As(err, &wx)
		if len(wx.WriteErrors) != 1 {
			t.Fatalf("%s: %v, want one E11000", what, err)
		}
		e = wx.WriteErrors[0]
	default:
		t.Fatalf("%s: %v, want E11000", what, err)
	}
	if e.Code != 11000 || !strings.Contains(e.Message, `index: _id_ collation: { locale: "en", caseLevel: false, caseFirst: "off", strength: 2,`) ||
		!strings.HasSuffix(e.Message, `dup key: { _id: "`+id+`" }`) {
		t.Errorf("%s: %d %q, want E11000 on _id_ with its collation, dup key %q", what, e.Code, e.Message, id)
	}
}

// TestCollationIDIndex: the _id index of a collection created with a default collation has
// that collation, as in MongoDB: listIndexes and listCollections show it, _id is unique under
// it ("A" after "a" at strength 2 is E11000, in one batch too), an equality on _id under it
// finds the _id that differs by case, the simple collation finds the exact one only. On an
// unsharded collection and on one sharded on another field (_id unique per logical partition).
func TestCollationIDIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := c.Database(dbName(t))
	for _, name := range []string{"plain", "sharded"} {
		if err := db.CreateCollection(ctx, name, options.CreateCollection().SetCollation(strength2)); err != nil {
			t.Fatal(err)
		}
	}
	shardColl(t, c, db.Name()+".sharded", "k", bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}})
	cur, err := db.ListCollections(ctx, bson.D{{Key: "name", Value: "plain"}})
	if err != nil {
		t.Fatal(err)
	}
	var colls []bson.M
	if err := cur.All(ctx, &colls); err != nil || len(colls) != 1 {
		t.Fatal(colls, err)
	}
	if got := collationOf(colls[0]["idIndex"]); got["locale"] != "en" || got["strength"] != int32(2) {
		t.Errorf("listCollections idIndex: %v; want the collection's collation", colls[0]["idIndex"])
	}
	simple := &options.Collation{Locale: "simple"}
	for _, name := range []string{"plain", "sharded"} {
		coll := db.Collection(name)
		if x := indexSpecs(t, coll)["_id_"]; collationOf(x)["strength"] != int32(2) {
			t.Errorf("%s: listIndexes _id_: %v; want the collection's collation", name, x)
		}
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}, {Key: "k", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "A"}, {Key: "k", Value: 1}})
		wantIDDup(t, name+": insert A after a", err, "A")
		_, err = coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: "b"}, {Key: "k", Value: 1}}, bson.D{{Key: "_id", Value: "B"}, {Key: "k", Value: 1}}},
			options.InsertMany().SetOrdered(false))
		wantIDDup(t, name+": insertMany b, B", err, "B")
		if got := idsOf(t, coll, bson.D{{Key: "_id", Value: "A"}}, nil); !reflect.DeepEqual(got, []string{"a"}) {
			t.Errorf("%s: find _id A under the default collation: %q, want [a]", name, got)
		}
		if got := idsOf(t, coll, bson.D{{Key: "_id", Value: "A"}}, simple); len(got) != 0 {
			t.Errorf("%s: find _id A under the simple collation: %q, want none", name, got)
		}
		if got := idsOf(t, coll, bson.D{{Key: "_id", Value: "b"}}, simple); !reflect.DeepEqual(got, []string{"b"}) {
			t.Errorf("%s: find _id b under the simple collation: %q, want [b]", name, got)
		}
		// An upsert on "B" finds "b" (k: the shard key a sharded upsert needs); once "a" is
		// deleted, "A" is free.
		u, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "B"}, {Key: "k", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, options.UpdateOne().SetUpsert(true))
		if err != nil || u.MatchedCount != 1 || u.UpsertedCount != 0 {
			t.Errorf("%s: upsert of B: %+v, %v; want b matched", name, u, err)
		}
		if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: "a"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "A"}, {Key: "k", Value: 1}}); err != nil {
			t.Errorf("%s: insert A after deleting a: %v", name, err)
		}
		var v bson.M
		if err := db.RunCommand(ctx, bson.D{{Key: "validate", Value: name}, {Key: "full", Value: true}}).Decode(&v); err != nil || v["valid"] != true {
			t.Errorf("%s: validate: %v, %v", name, v, err)
		}
	}
	// An _id equality under the default collation reads the collated _id index.
	if ex := explainCollated(t, db, "plain", bson.D{{Key: "_id", Value: "B"}}, nil); ex.index != "_id_" || !ex.collation || ex.n != 1 || ex.keys != 1 {
		t.Errorf("explain _id B under the default collation: %+v; want an IXSCAN of _id_ with its collation, 1 key, 1 returned", ex)
	}
	// Sharded on k: _id is unique per logical partition, under the collation.
	if _, err := db.Collection("sharded").InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}, {Key: "k", Value: 2}}); err != nil {
		t.Errorf("sharded: insert a in another partition: %v", err)
	}
	if got := idsOf(t, db.Collection("sharded"), bson.D{{Key: "_id", Value: "a"}}, nil); !reflect.DeepEqual(got, []string{"A", "a"}) {
		t.Errorf("sharded: find _id a under the default collation: %q, want [A a]", got)
	}
	// {_id: 1} with the default collation is the _id index itself.
	res, err := createIndexesCmd(t, db, "plain", bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "name", Value: "_id_"}})
	if err != nil || res["note"] != "all indexes already exist" {
		t.Errorf("createIndexes {_id: 1}: %v, %v; want all indexes already exist", res, err)
	}
}
