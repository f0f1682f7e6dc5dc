package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestShardRefineKey drives refineCollectionShardKey on a ranged key split over two shards
// and on a hashed key: the key gains a suffix field in config.collections, the chunks show it
// at MinKey, a zone range is extended as MongoDB extends config.tags, no document moves (the
// chunks keep their bounds and shards), a find on the former key still reads one partition,
// and answers equal an unsharded copy's. MongoDB's refusals: a key that does not extend the
// current one, no supporting index, a collection that is not sharded; cleave's own: a hashed
// suffix on a ranged key (it would move every document).
func TestShardRefineKey(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	ns := db.Name() + ".r"
	admin := func(cmd bson.D) error { return zoneAdmin(t, c, cmd) }
	refine := func(ns string, key bson.D) error {
		return admin(bson.D{{Key: "refineCollectionShardKey", Value: ns}, {Key: "key", Value: key}})
	}
	xy := bson.D{{Key: "x", Value: 1}, {Key: "y", Value: 1}}
	if err := admin(bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	coll, plain := db.Collection("r"), db.Collection("plain")
	insertIncreasing(t, 0, 600, coll, plain)
	for _, cmd := range []bson.D{
		{{Key: "split", Value: ns}, {Key: "middle", Value: bson.D{{Key: "x", Value: 300}}}},
		{{Key: "moveChunk", Value: ns}, {Key: "find", Value: bson.D{{Key: "x", Value: 400}}}, {Key: "to", Value: "shard-1"}},
		{{Key: "addShardToZone", Value: "shard-1"}, {Key: "zone", Value: "TOP"}},
		zoneRange(ns, 300, bson.MaxKey{}, "TOP"),
	} {
		if err := admin(cmd); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	uuid := collUUID(t, c, ns)
	before := rangedChunks(t, c, uuid)

	wantCode(t, refine(ns, bson.D{{Key: "y", Value: 1}, {Key: "x", Value: 1}}), 72,
		"refineCollectionShardKey shard key { y: 1, x: 1 } does not extend the current shard key { x: 1 }")
	wantCode(t, refine(ns, xy), 72, "Please create an index that starts with the proposed shard key")
	wantCode(t, refine(db.Name()+".plain", xy), 118, "is not sharded")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: xy}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}, {Key: "z", Value: "hashed"}}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, refine(ns, bson.D{{Key: "x", Value: 1}, {Key: "z", Value: "hashed"}}), 238, "would move every document")
	if err := refine(ns, xy); err != nil {
		t.Fatalf("refine to {x: 1, y: 1}: %v", err)
	}
	if err := refine(ns, xy); err != nil {
		t.Fatalf("refine to the key it has: %v", err)
	}
	var cd struct {
		Key bson.D `bson:"key"`
	}
	if err := c.Database("config").Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: ns}}).Decode(&cd); err != nil {
		t.Fatal(err)
	}
	if len(cd.Key) != 2 || cd.Key[1].Key != "y" {
		t.Fatalf("config.collections key after refine: %v", cd.Key)
	}
	after := rangedChunks(t, c, uuid)
	if len(after) != len(before) {
		t.Fatalf("chunks before %v, after %v", before, after)
	}
	for i := range after {
		if after[i].Shard != before[i].Shard || len(after[i].Min) != 2 || chunkKey(t, after[i].Min) != chunkKey(t, before[i].Min) {
			t.Fatalf("chunk %d before %v, after %v", i, before[i], after[i])
		}
		if i > 0 && after[i].Min[1].Value != (bson.MinKey{}) {
			t.Fatalf("chunk %d's min after refine: %v", i, after[i].Min)
		}
	}
	var tag struct {
		Min bson.D `bson:"min"`
	}
	if err := c.Database("config").Collection("tags").FindOne(ctx, bson.D{{Key: "ns", Value: ns}}).Decode(&tag); err != nil || len(tag.Min) != 2 {
		t.Fatalf("config.tags after refine: %v %v", tag, err)
	}
	insertIncreasing(t, 600, 700, coll, plain)
	for _, f := range []bson.D{{{Key: "x", Value: 450}}, {{Key: "x", Value: 450}, {Key: "y", Value: nil}}, {{Key: "x", Value: 650}}} {
		if r := explainHier(t, coll, f); len(r.partitions) != 1 || r.stage != "SINGLE_SHARD" {
			t.Fatalf("find(%v) read %v after refine", f, r.partitions)
		}
	}
	// {x, y: null} names the whole refined key: it must find the documents stored before the
	// refine (where the former key placed them) as well as those inserted after.
	for _, f := range []bson.D{{}, {{Key: "x", Value: bson.D{{Key: "$gte", Value: 250}, {Key: "$lt", Value: 650}}}},
		{{Key: "x", Value: 450}, {Key: "y", Value: nil}}, {{Key: "x", Value: 650}, {Key: "y", Value: nil}},
		{{Key: "x", Value: bson.D{{Key: "$in", Value: bson.A{5, 450, 650}}}}, {Key: "y", Value: nil}}} {
		if got, want := hierIDs(t, coll, f), hierIDs(t, plain, f); !slices.Equal(got, want) {
			t.Fatalf("find(%v): %d documents, unsharded %d", f, len(got), len(want))
		}
	}

	// A hashed key takes an ascending suffix.
	hns := db.Name() + ".h"
	if err := admin(bson.D{{Key: "shardCollection", Value: hns}, {Key: "key", Value: bson.D{{Key: "d", Value: "hashed"}}}}); err != nil {
		t.Fatal(err)
	}
	hc := db.Collection("h")
	insertDevicesField(t, hc, 300)
	hk := bson.D{{Key: "d", Value: "hashed"}, {Key: "n", Value: 1}}
	if _, err := hc.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: hk}); err != nil {
		t.Fatal(err)
	}
	if err := refine(hns, hk); err != nil {
		t.Fatalf("refine to %v: %v", hk, err)
	}
	if n, err := hc.CountDocuments(ctx, bson.D{{Key: "d", Value: "dev-007"}}); err != nil || n != 3 {
		t.Fatalf("dev-007 after refine: %d %v", n, err)
	}
	if r := explainHier(t, hc, bson.D{{Key: "d", Value: "dev-007"}}); len(r.partitions) != 1 {
		t.Fatalf("find by the former hashed key read %v", r.partitions)
	}
}

// insertDevicesField inserts n documents {_id, d: "dev-NNN" (100 of them), n} into coll.
func insertDevicesField(t *testing.T, coll *mongo.Collection, n int) {
	t.Helper()
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "d", Value: fmt.Sprintf("dev-%03d", i%100)}, {Key: "n", Value: i}}
	}
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
}
