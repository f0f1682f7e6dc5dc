package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// setClusterFailPoint sets failpoint name to mode through c and returns how many times it had fired.
func setClusterFailPoint(t *testing.T, c *mongo.Client, name string, mode any) int64 {
	t.Helper()
	var out bson.M
	err := c.Database("admin").RunCommand(context.Background(),
		bson.D{{Key: "configureFailPoint", Value: name}, {Key: "mode", Value: mode}}).Decode(&out)
	if err != nil {
		t.Fatalf("configureFailPoint %s %v: %v", name, mode, err)
	}
	switch n := out["count"].(type) {
	case int32:
		return int64(n)
	case int64:
		return n
	}
	t.Fatalf("configureFailPoint %s: count %v", name, out["count"])
	return 0
}

// insertTenants inserts n documents {_id, tenant} into db.coll through c and returns their
// _ids.
func insertTenants(t *testing.T, c *mongo.Client, db, coll string, n int) []int32 {
	t.Helper()
	docs := make([]any, n)
	ids := make([]int32, n)
	for i := range docs {
		ids[i] = int32(i)
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "tenant", Value: fmt.Sprintf("t%d", i%101)}}
	}
	if _, err := c.Database(db).Collection(coll).InsertMany(context.Background(), docs); err != nil {
		t.Fatalf("insert: %v", err)
	}
	return ids
}

// TestClusterMoveDestinationRestarts: a move from node-a's shard to node-b's is paused just
// before its flip (the pauseMoveBeforeFlip failpoint, under the source's locks, after the last
// copy pass); node-b restarts meanwhile (its start deletes the copy, which it does not own).
// Released, the flip is refused (it is conditioned on node-b's incarnation at begin), the move
// fails with 117 and shard-0 keeps the chunk; every node still returns every acknowledged
// document exactly once.
func TestClusterMoveDestinationRestarts(t *testing.T) {
	t.Parallel()
	_, nodes, clients, dbn, ns := startMoveCluster(t, "--test-commands")
	ctx := context.Background()
	ids := insertTenants(t, clients[2], dbn, "c", 600)

	target := lastChunkOn(t, clients[0], ns, "shard-0")
	if target == nil {
		t.Fatal("no chunk on shard-0")
	}
	setClusterFailPoint(t, clients[0], "pauseMoveBeforeFlip", "alwaysOn")
	done := make(chan error, 1)
	go func() {
		done <- clients[2].Database("admin").RunCommand(ctx, bson.D{{Key: "moveChunk", Value: ns},
			{Key: "bounds", Value: bson.A{target["min"], target["max"]}}, {Key: "to", Value: "shard-1"}}).Err()
	}()
	waitFor(t, 30*time.Second, "the move reaches its flip", func() bool {
		return setClusterFailPoint(t, clients[0], "pauseMoveBeforeFlip", "alwaysOn") >= 1
	})
	nodes[1].stop()
	nodes[1].restart()
	clients[1] = nodes[1].client(t)
	waitClusterShards(t, clients, 3)
	setClusterFailPoint(t, clients[0], "pauseMoveBeforeFlip", "off")

	err := <-done
	checkExactlyOnce(t, clients, dbn, "c", ids)
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 117 {
		t.Fatalf("moveChunk after the destination restarted: %v, want 117 ConflictingOperationInProgress", err)
	}
	for i, c := range clients {
		for _, ch := range clusterChunks(t, c, ns) {
			if ch["min"].(bson.D)[0].Value == target["min"].(bson.D)[0].Value && ch["shard"] != "shard-0" {
				t.Fatalf("node %d: the chunk moved to %v", i, ch["shard"])
			}
		}
	}
}

// collShards returns the shards $collStats through c lists for db.coll (those holding
// its partitions).
func collShards(t *testing.T, c *mongo.Client, db, coll string) []string {
	t.Helper()
	var out []string
	for _, d := range aggAll(t, c.Database(db).Collection(coll), bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}}) {
		out = append(out, d["shard"].(string))
	}
	return out
}

// TestClusterDrainingNodeCreatesElsewhere: once node-a's only shard drains (removeShard),
// an unsharded collection node-a creates (by an insert, and by create) starts on a shard
// that is not draining, not on node-a's own; a capped one, which can never move, stays
// there. The manager makes no move here (its interval is an hour): the placement is the
// creation's.
func TestClusterDrainingNodeCreatesElsewhere(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 3, "--partition-check-interval", "1h")
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	waitClusterShards(t, clients, 3)
	dbn := dbName(t)
	removeShardUntilDone(t, clients[1], "shard-0")
	db := clients[0].Database(dbn)
	ids := insertTenants(t, clients[0], dbn, "fresh", 50)
	if err := db.CreateCollection(context.Background(), "made"); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection(context.Background(), "ring", options.CreateCollection().SetCapped(true).SetSizeInBytes(1<<20)); err != nil {
		t.Fatal(err)
	}
	for i, c := range clients {
		for _, coll := range []string{"fresh", "made"} {
			if got := collShards(t, c, dbn, coll); len(got) != 1 || got[0] == "shard-0" {
				t.Fatalf("node %d: %s is on %v, want one shard other than the draining shard-0", i, coll, got)
			}
		}
		if got := collShards(t, c, dbn, "ring"); len(got) != 1 || got[0] != "shard-0" {
			t.Fatalf("node %d: the capped collection is on %v, want shard-0", i, got)
		}
	}
	checkExactlyOnce(t, clients, dbn, "fresh", ids)
}

// lastChunkOn returns the last chunk of ns that config.chunks, read through c, places on shard.
func lastChunkOn(t *testing.T, c *mongo.Client, ns, shard string) bson.M {
	t.Helper()
	var target bson.M
	for _, ch := range clusterChunks(t, c, ns) {
		if ch["shard"] == shard {
			target = ch
		}
	}
	return target
}
