package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
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
	_, nodes, clients, dbn, ns := startMoveCluster(t, "--test-commands")
	ctx := context.Background()
	ids := insertTenants(t, clients[2], dbn, "c", 600)

	var target bson.M
	for _, ch := range clusterChunks(t, clients[0], ns) {
		if ch["shard"] == "shard-0" {
			target = ch
		}
	}
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
