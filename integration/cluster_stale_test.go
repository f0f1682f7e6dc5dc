package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// nodeShards returns the shards each node owns (by listShards' hosts), in node order.
func nodeShards(t *testing.T, c *mongo.Client, nodes []*server) [][]string {
	t.Helper()
	res, err := runCmd(t, c.Database("admin"), bson.D{{Key: "listShards", Value: 1}})
	if err != nil {
		t.Fatalf("listShards: %v", err)
	}
	out := make([][]string, len(nodes))
	for _, sh := range res["shards"].(bson.A) {
		d := asM(sh)
		for i, n := range nodes {
			if strings.HasSuffix(d["host"].(string), "/"+n.addr) {
				out[i] = append(out[i], d["_id"].(string))
			}
		}
	}
	return out
}

// pauseWatch turns the pauseCatalogWatch failpoint of the node c talks to on or off.
func pauseWatch(t *testing.T, c *mongo.Client, on bool) {
	t.Helper()
	mode := map[bool]string{true: "alwaysOn", false: "off"}[on]
	if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "pauseCatalogWatch"}, {Key: "mode", Value: mode}}); err != nil {
		t.Fatalf("pauseCatalogWatch %s: %v", mode, err)
	}
}

// moveBehindPausedWatch pauses node-a's catalog watch (clients[0]; released when the test
// ends, or earlier by the caller), then moves the first chunk of ns on node-b's first shard
// to its second through node-b, so that node-a routes on a map the move made stale. It
// returns that shard and its chunks before the move.
func moveBehindPausedWatch(t *testing.T, clients []*mongo.Client, nodes []*server, ns string) (from string, chunks []bson.M) {
	t.Helper()
	owned := nodeShards(t, clients[1], nodes)
	if len(owned[1]) != 2 {
		t.Fatalf("node-b owns %v, want two shards", owned[1])
	}
	from, to := owned[1][0], owned[1][1]
	chunks = chunkDocsOn(t, clients[1], ns, from)
	if len(chunks) == 0 {
		t.Fatalf("no chunk of %s on %s", ns, from)
	}
	pauseWatch(t, clients[0], true)
	t.Cleanup(func() { pauseWatch(t, clients[0], false) })
	if _, err := runCmd(t, clients[1].Database("admin"), bson.D{{Key: "moveChunk", Value: ns},
		{Key: "bounds", Value: bson.A{chunks[0]["min"], chunks[0]["max"]}}, {Key: "to", Value: to}}); err != nil {
		t.Fatalf("moveChunk on node-b: %v", err)
	}
	return from, chunks
}

// chunkDocsOn returns node c's config.chunks entries of ns on shard shardID.
func chunkDocsOn(t *testing.T, c *mongo.Client, ns, shardID string) []bson.M {
	t.Helper()
	ctx := context.Background()
	cur, err := c.Database("config").Collection("chunks").Find(ctx, bson.D{{Key: "ns", Value: ns}, {Key: "shard", Value: shardID}})
	if err != nil {
		t.Fatalf("config.chunks: %v", err)
	}
	var out []bson.M
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sortedIDs reads every _id of coll through c, sorted.
func sortedIDs(t *testing.T, c *mongo.Client, db, coll string) []int32 {
	t.Helper()
	ctx := context.Background()
	cur, err := c.Database(db).Collection(coll).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatalf("find: %v", err)
	}
	ids := make([]int32, len(docs))
	for i, d := range docs {
		ids[i] = d["_id"].(int32)
	}
	return ids
}

// TestClusterStaleRouterRetries: node-a's catalog watch is held (pauseCatalogWatch), so it
// routes on its old map. node-b moves one of its partitions to its other shard; node-a's
// reads of the collection reach node-b with the old ranges, node-b answers StaleConfig with
// its revision, and node-a waits for its watch, plans again and answers the right documents
// (the client never sees 13388). Then node-b drops and recreates a collection; node-a's
// insert into it, planned on the dropped one, is refused by node-b as stale and routed again
// into the new collection.
func TestClusterStaleRouterRetries(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 2, "--shards", "2", "--test-commands")
	ctx := context.Background()
	clients := []*mongo.Client{nodes[0].client(t), nodes[1].client(t)}
	waitClusterShards(t, clients, 4)
	dbn := dbName(t)
	ns := dbn + ".users"
	shardColl(t, clients[0], ns, "tenant", bson.E{Key: "numInitialChunks", Value: 8})
	waitClusterChunks(t, clients, 8, 4)
	const total = 80
	docs := make([]any, total)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "tenant", Value: fmt.Sprintf("t%d", i%13)}}
	}
	if _, err := clients[0].Database(dbn).Collection("users").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	want := make([]int32, total)
	for i := range want {
		want[i] = int32(i)
	}

	from, chunks := moveBehindPausedWatch(t, clients, nodes, ns)
	if got := len(chunkDocsOn(t, clients[0], ns, from)); got != len(chunks) {
		t.Fatalf("node-a lists %d chunks on %s after the move, want the %d of its held catalog", got, from, len(chunks))
	}

	// node-a reads on its old map: node-b refuses, node-a catches up and reads again.
	if n, err := clients[0].Database(dbn).Collection("users").CountDocuments(ctx, bson.D{}); err != nil || n != total {
		t.Fatalf("count through the stale node-a = %d, %v; want %d", n, err, total)
	}
	if got := len(chunkDocsOn(t, clients[0], ns, from)); got != len(chunks)-1 {
		t.Fatalf("node-a lists %d chunks on %s after the retry, want %d", got, from, len(chunks)-1)
	}
	if got := sortedIDs(t, clients[0], dbn, "users"); !slices.Equal(got, want) {
		t.Fatalf("find through node-a = %v", got)
	}

	// A collection of node-b's, dropped and created again there while node-a holds its watch.
	pauseWatch(t, clients[0], false)
	solo := clients[1].Database(dbn).Collection("solo")
	if _, err := solo.InsertOne(ctx, bson.D{{Key: "_id", Value: int32(0)}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "node-a reads solo", func() bool {
		n, err := clients[0].Database(dbn).Collection("solo").CountDocuments(ctx, bson.D{})
		return err == nil && n == 1
	})
	pauseWatch(t, clients[0], true)
	if err := solo.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := solo.InsertOne(ctx, bson.D{{Key: "_id", Value: int32(1)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := clients[0].Database(dbn).Collection("solo").InsertOne(ctx, bson.D{{Key: "_id", Value: int32(2)}}); err != nil {
		t.Fatalf("insert through the stale node-a: %v", err)
	}
	if got := sortedIDs(t, clients[1], dbn, "solo"); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("solo on node-b holds %v, want [1 2]", got)
	}
}
