package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestIDUniquePerLogicalPartition: in a collection sharded on tenantId, _id is unique within
// a tenant (a logical partition), as in Cosmos DB: two tenants both hold {_id: "settings"};
// a find by _id alone fans out and returns both, with the shard key it is targeted and returns
// one; a second "settings" in one tenant, or moving one tenant's document into the other by
// changing its shard key, is a duplicate key. Unsharded collections keep one global _id.
func TestIDUniquePerLogicalPartition(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("tenants")
	shardColl(t, c, "tenants.prefs", "tenantId", bson.E{Key: "numInitialChunks", Value: 8})
	coll := db.Collection("prefs")
	for _, tenant := range []string{"acme", "globex"} {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "settings"}, {Key: "tenantId", Value: tenant}, {Key: "theme", Value: tenant + "-dark"}}); err != nil {
			t.Fatalf("insert settings of %s: %v", tenant, err)
		}
	}
	isDup := func(err error) bool {
		var we mongo.WriteException
		var ce mongo.CommandError
		return (errors.As(err, &we) && len(we.WriteErrors) > 0 && we.WriteErrors[0].Code == 11000) ||
			(errors.As(err, &ce) && ce.Code == 11000)
	}
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "settings"}, {Key: "tenantId", Value: "acme"}})
	if !isDup(err) {
		t.Fatalf("a second settings document for acme: %v, want E11000", err)
	}
	// Within one insertMany too.
	_, err = coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "x"}, {Key: "tenantId", Value: "initech"}},
		bson.D{{Key: "_id", Value: "x"}, {Key: "tenantId", Value: "umbrella"}},
		bson.D{{Key: "_id", Value: "x"}, {Key: "tenantId", Value: "initech"}},
	})
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 2 || bwe.WriteErrors[0].Code != 11000 {
		t.Fatalf("insertMany of x for initech, umbrella, initech: %v, want one E11000 at index 2", err)
	}
	count := func(filter bson.D) int64 {
		t.Helper()
		cur, err := coll.Find(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.M
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		return int64(len(docs))
	}
	if n := count(bson.D{{Key: "_id", Value: "settings"}}); n != 2 {
		t.Errorf("find by _id alone: %d documents, want both tenants' 2", n)
	}
	if n := count(bson.D{{Key: "_id", Value: "settings"}, {Key: "tenantId", Value: "globex"}}); n != 1 {
		t.Errorf("find by _id and tenant: %d documents, want 1", n)
	}
	// With the shard key the read is one point read on one shard, no _id index lookup.
	var ex bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "prefs"},
		{Key: "filter", Value: bson.D{{Key: "_id", Value: "settings"}, {Key: "tenantId", Value: "globex"}}}}},
		{Key: "verbosity", Value: "executionStats"}}).Decode(&ex); err != nil {
		t.Fatal(err)
	}
	stats := shardM(ex["executionStats"])
	shards := shardM(shardM(ex["queryPlanner"])["winningPlan"])["shards"].(bson.A)
	if len(shards) != 1 || stats["totalDocsExamined"] != int32(1) || stats["totalKeysExamined"] != int32(0) {
		t.Errorf("find by _id and tenant read %d shards, %v documents and %v keys; want 1, 1, 0",
			len(shards), stats["totalDocsExamined"], stats["totalKeysExamined"])
	}
	if n := count(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"settings", "x"}}}}}); n != 4 {
		t.Errorf("find _id $in [settings, x]: %d documents, want 4", n)
	}
	// Moving globex's settings into acme collides with acme's.
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "settings"}, {Key: "tenantId", Value: "globex"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "tenantId", Value: "acme"}}}})
	if !isDup(err) {
		t.Fatalf("changing globex's settings to acme: %v, want E11000", err)
	}
	// Moving it to a tenant without one works, and leaves one document.
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "settings"}, {Key: "tenantId", Value: "globex"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "tenantId", Value: "hooli"}}}}); err != nil {
		t.Fatal(err)
	}
	if n := count(bson.D{{Key: "_id", Value: "settings"}}); n != 2 {
		t.Errorf("after the move: %d settings documents, want 2", n)
	}
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "settings"}, {Key: "tenantId", Value: "hooli"}}).Decode(&got); err != nil || got["theme"] != "globex-dark" {
		t.Errorf("hooli's settings: %v %v", got, err)
	}
	// Unsharded: one global _id.
	plain := db.Collection("plain")
	if _, err := plain.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "tenantId", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "tenantId", Value: "b"}}); !isDup(err) {
		t.Errorf("unsharded duplicate _id: %v, want E11000", err)
	}
}

// TestCheckMetadataConsistency: mongosh's db.checkMetadataConsistency() and the command on
// admin and on one collection answer an empty cursor for consistent partition maps.
func TestCheckMetadataConsistency(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	shardColl(t, srv.client(t), "meta.c", "k", bson.E{Key: "numInitialChunks", Value: 8})
	out := srv.mongosh(t, "meta", "--eval", `
		print("db", db.checkMetadataConsistency().toArray().length);
		print("coll", db.c.checkMetadataConsistency().toArray().length);
		const r = db.getSiblingDB("admin").runCommand({checkMetadataConsistency: 1});
		print("admin", r.ok, r.cursor.id, r.cursor.firstBatch.length, r.cursor.ns);`)
	if !strings.Contains(out, "db 0") || !strings.Contains(out, "coll 0") || !strings.Contains(out, "admin 1 Long('0') 0 admin.$cmd.aggregate") {
		t.Fatalf("mongosh: %s", out)
	}
}
