package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestClusterCatalogFreshAfterOtherNodesDDL: node-a's catalog watch is held
// (pauseCatalogWatch), so it learns nothing of node-b's changes by itself. A client that
// has seen node-b's answer to a DDL command expects the next node to know its result, as a
// mongos refreshes its routing table: node-a, asked about a collection it does not hold (or
// to change the catalog), reads how far the cluster's catalog has got and waits for its
// watch to reach it. Without that, each command below answers NamespaceNotFound, or reads
// nothing, on node-a.
func TestClusterCatalogFreshAfterOtherNodesDDL(t *testing.T) {
	t.Parallel()
	clients := twoNodesWithTestCommands(t)
	ctx := context.Background()
	dbn := dbName(t)
	pauseWatch(t, clients[0], true)
	t.Cleanup(func() { pauseWatch(t, clients[0], false) })

	// Filled through node-b (on its shard: node-a takes no part), read through node-a.
	docs := make([]any, 20)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "tenant", Value: fmt.Sprintf("t%d", i%7)}}
	}
	if _, err := clients[1].Database(dbn).Collection("users").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if got := sortedIDs(t, clients[0], dbn, "users"); len(got) != len(docs) {
		t.Fatalf("find through node-a right after node-b's insert: %v, want %d documents", got, len(docs))
	}

	// Created with an index through node-b, listed through node-a.
	events := clients[1].Database(dbn).Collection("events")
	if _, err := events.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if got := indexNames(t, clients[0], dbn, "events"); !slices.Equal(got, []string{"_id_", "at_1"}) {
		t.Fatalf("listIndexes through node-a right after node-b's createIndexes: %v", got)
	}

	// Filled, then sharded, through node-b (a filled collection stays on its shard),
	// resharded through node-a (the coordinator it reaches).
	ns := dbn + ".devices"
	if _, err := clients[1].Database(dbn).Collection("devices").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	shardColl(t, clients[1], ns, "tenant")
	if _, err := runCmd(t, clients[0].Database("admin"), bson.D{{Key: "reshardCollection", Value: ns},
		{Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}}); err != nil {
		t.Fatalf("reshardCollection through node-a right after node-b's shardCollection: %v", err)
	}
	pauseWatch(t, clients[0], false)
	for i, c := range clients {
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d to list %s's new key", i, ns), func() bool {
			var coll bson.M
			err := c.Database("config").Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: ns}}).Decode(&coll)
			key := asM(coll["key"])
			return err == nil && key["_id"] == "hashed" && len(key) == 1
		})
		if got := sortedIDs(t, c, dbn, "devices"); len(got) != len(docs) {
			t.Fatalf("node %d: %s holds %v after the reshard", i, ns, got)
		}
	}
}

// twoNodesWithTestCommands starts a cluster of two nodes that take test commands (the
// catalog watch's failpoints) and returns a client of each once both see both shards.
func twoNodesWithTestCommands(t *testing.T) []*mongo.Client {
	t.Helper()
	_, nodes := startClusterNodes(t, 2, "--test-commands")
	clients := []*mongo.Client{nodes[0].client(t), nodes[1].client(t)}
	waitClusterShards(t, clients, 2)
	return clients
}
