package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestClusterMergeRacesMove: a merge by hand sent to another node commits while node-a's move
// of one of the merged chunks to node-b's shard waits just before its flip (the
// pauseMoveBeforeFlip failpoint, after its last copy pass): the merge does not wait for a
// move on another node. Released, the flip finds its partition merged away and is refused:
// the move fails with 117 ConflictingOperationInProgress, shard-0 keeps the merged chunk, and
// node-b was told to drop its copy at once, so the next move into its shard begins (before,
// node-b held the copy and its DDL lock until its two-minute sweep, and that move failed
// after waiting 5 s for the lock). Every node returns every document exactly once.
func TestClusterMergeRacesMove(t *testing.T) {
	_, _, clients, dbn, ns := startMoveCluster(t, "--test-commands", "--partition-check-interval", "1h")
	ctx := context.Background()
	admin := func(c *mongo.Client, cmd bson.D) error { return c.Database("admin").RunCommand(ctx, cmd).Err() }
	ids := insertTenants(t, clients[2], dbn, "c", 600)

	// Two adjacent chunks on shard-0: its last one, split at its median by its owner.
	target := lastChunkOn(t, clients[0], ns, "shard-0")
	if target == nil {
		t.Fatal("no chunk on shard-0")
	}
	if err := admin(clients[0], bson.D{{Key: "split", Value: ns}, {Key: "bounds", Value: bson.A{target["min"], target["max"]}}}); err != nil {
		t.Fatalf("split: %v", err)
	}
	var left, right bson.M
	for _, ch := range clusterChunks(t, clients[0], ns) {
		if ch["shard"] != "shard-0" {
			continue
		}
		if ch["min"].(bson.D)[0].Value == target["min"].(bson.D)[0].Value {
			left = ch
		}
		if ch["max"].(bson.D)[0].Value == target["max"].(bson.D)[0].Value {
			right = ch
		}
	}
	if left == nil || right == nil || left["max"].(bson.D)[0].Value != right["min"].(bson.D)[0].Value {
		t.Fatalf("the split's children: %v %v", left, right)
	}

	setClusterFailPoint(t, clients[0], "pauseMoveBeforeFlip", "alwaysOn")
	done := make(chan error, 1)
	go func() {
		done <- admin(clients[2], bson.D{{Key: "moveChunk", Value: ns},
			{Key: "bounds", Value: bson.A{right["min"], right["max"]}}, {Key: "to", Value: "shard-1"}})
	}()
	waitFor(t, 30*time.Second, "the move reaches its flip", func() bool {
		return setClusterFailPoint(t, clients[0], "pauseMoveBeforeFlip", "alwaysOn") >= 1
	})
	if err := admin(clients[1], bson.D{{Key: "mergeChunks", Value: ns}, {Key: "bounds", Value: bson.A{left["min"], right["max"]}}}); err != nil {
		t.Fatalf("mergeChunks during the move: %v", err)
	}
	setClusterFailPoint(t, clients[0], "pauseMoveBeforeFlip", "off")
	err := <-done
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 117 {
		t.Fatalf("moveChunk of a chunk merged away before its flip: %v, want 117 ConflictingOperationInProgress", err)
	}
	merged := false
	for _, ch := range clusterChunks(t, clients[1], ns) {
		if ch["min"].(bson.D)[0].Value == left["min"].(bson.D)[0].Value {
			merged = ch["shard"] == "shard-0" && ch["max"].(bson.D)[0].Value == right["max"].(bson.D)[0].Value
		}
	}
	if !merged {
		t.Fatalf("chunks after the merge: %v", clusterChunks(t, clients[1], ns))
	}
	checkExactlyOnce(t, clients, dbn, "c", ids)

	// node-b dropped the copy and its DDL lock: the merged chunk moves into its shard now.
	if err := admin(clients[2], bson.D{{Key: "moveChunk", Value: ns},
		{Key: "bounds", Value: bson.A{left["min"], right["max"]}}, {Key: "to", Value: "shard-1"}}); err != nil {
		t.Fatalf("the next move into shard-1: %v", err)
	}
	checkExactlyOnce(t, clients, dbn, "c", ids)
}
