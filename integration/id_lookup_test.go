package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestFindByIDShardedOnAnotherField: in a collection sharded on hashed deviceId over two
// shards, a find by _id learns the _id's hashes from each shard's _id index, and each shard
// keeps that answer (store.DB.IDIndexHashes). Every write that changes where an _id is must
// show in the next find: a second document with the same _id under another deviceId, its
// delete, a change of the shard key, a delete and a new insert. The finds are repeated, so
// that most are answered from the cache (the metrics say so), and explain examines the
// same keys whether the answer was cached or read.
func TestFindByIDShardedOnAnotherField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := c.Database("idlookup")
	coll := db.Collection("r")
	shardColl(t, c, "idlookup.r", "deviceId")
	const n = 200
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "deviceId", Value: fmt.Sprintf("d%d", i%7)}, {Key: "v", Value: i}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	// devices returns the deviceIds of the documents find({_id: id}) returns, in order.
	devices := func(id int) []string {
		t.Helper()
		var out []string
		for range 2 { // the second find is answered from the shards' caches
			cur, err := coll.Find(ctx, bson.D{{Key: "_id", Value: id}})
			if err != nil {
				t.Fatal(err)
			}
			var got []struct {
				Device string `bson:"deviceId"`
			}
			if err := cur.All(ctx, &got); err != nil {
				t.Fatal(err)
			}
			var ds []string
			for _, g := range got {
				ds = append(ds, g.Device)
			}
			if out != nil && fmt.Sprint(ds) != fmt.Sprint(out) {
				t.Fatalf("find _id %d: %v, then %v", id, out, ds)
			}
			out = ds
		}
		return out
	}
	want := func(step string, id int, ds ...string) {
		t.Helper()
		got := devices(id)
		if len(got) > 1 && len(ds) > 1 && got[0] > got[1] { // the shards' order is not the test's
			got[0], got[1] = got[1], got[0]
		}
		if fmt.Sprint(got) != fmt.Sprint(ds) {
			t.Fatalf("%s: find _id %d returned deviceIds %v, want %v", step, id, got, ds)
		}
	}
	for i := range n {
		want("loaded", i, fmt.Sprintf("d%d", i%7))
	}
	want("absent", n+1)

	// The same _id under another deviceId: _id is unique per shard-key value, as in Cosmos DB.
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "deviceId", Value: "zz"}}); err != nil {
		t.Fatal(err)
	}
	want("a second document with _id 5", 5, "d5", "zz")
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "deviceId", Value: "d5"}}); err != nil {
		t.Fatal(err)
	}
	want("the first _id 5 deleted", 5, "zz")

	// A change of the shard key moves the document to another hash, often another shard.
	for _, id := range []int{7, 8, 9, 10} {
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "deviceId", Value: fmt.Sprintf("d%d", id%7)}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "deviceId", Value: fmt.Sprintf("moved%d", id)}}}}); err != nil {
			t.Fatal(err)
		}
		want("shard key changed", id, fmt.Sprintf("moved%d", id))
	}

	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 11}}); err != nil {
		t.Fatal(err)
	}
	want("deleted", 11)
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 11}, {Key: "deviceId", Value: "back"}}); err != nil {
		t.Fatal(err)
	}
	want("inserted again", 11, "back")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: n + 1}, {Key: "deviceId", Value: "new"}}); err != nil {
		t.Fatal(err)
	}
	want("inserted after a find that found nothing", n+1, "new")

	// explain examines one key per shard, read or cached: the shard that holds _id 3 finds
	// its entry, the other finds none.
	var first [3]int64
	for i := range 2 {
		var ex bson.M
		if err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "r"},
			{Key: "filter", Value: bson.D{{Key: "_id", Value: 3}}}}},
			{Key: "verbosity", Value: "executionStats"}}).Decode(&ex); err != nil {
			t.Fatal(err)
		}
		stats := shardM(ex["executionStats"])
		got := [3]int64{asInt64(stats["nReturned"]), asInt64(stats["totalKeysExamined"]), asInt64(stats["totalDocsExamined"])}
		if want := [3]int64{1, 2, 1}; got != want {
			t.Errorf("explain %d: returned, keys and documents examined %v; want %v", i, got, want)
		}
		if i == 0 {
			first = got
		} else if got != first {
			t.Errorf("explain: %v, then %v", first, got)
		}
		// Per shard: both read, one key each; the one that holds _id 3 read its document.
		var perShard [][3]int64
		for _, s := range shardM(stats["executionStages"])["shards"].(bson.A) {
			m := shardM(s)
			perShard = append(perShard, [3]int64{asInt64(m["nReturned"]), asInt64(m["totalKeysExamined"]), asInt64(m["totalDocsExamined"])})
		}
		if len(perShard) == 2 && perShard[0][0] == 0 {
			perShard[0], perShard[1] = perShard[1], perShard[0]
		}
		if want := [][3]int64{{1, 1, 1}, {0, 1, 0}}; fmt.Sprint(perShard) != fmt.Sprint(want) {
			t.Errorf("explain %d per shard: returned, keys and documents examined %v; want %v", i, perShard, want)
		}
	}

	fams := scrape(t, srv)
	hits, series := metricSum(fams, "cleave_store_id_cache_hits_total", nil)
	misses, _ := metricSum(fams, "cleave_store_id_cache_misses_total", nil)
	if series != 2 || hits < n {
		t.Errorf("cleave_store_id_cache_hits_total: %g over %d shards (%g misses); want at least %d over 2", hits, series, misses, n)
	}
}
