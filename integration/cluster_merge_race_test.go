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

// TestClusterMergeRacesMove: a merge by hand sent to another node goes to the node owning the
// chunks, as a split does, which alone knows whether it is moving one of them: while node-a's
// move of one of the chunks to node-b's shard waits just before its flip (the
// pauseMoveBeforeFlip failpoint, after its last copy pass), mergeChunks through node-b is
// refused with 117 ConflictingOperationInProgress and changes nothing, and the move commits
// once released (before, node-b merged on its own, and the move failed at its flip). Then a
// merge through node-b of two chunks node-a owns commits on node-a, and node-b lists the
// merged chunk as soon as it answers; so does mergeAllChunksOnShard through node-c. Every node returns every document exactly once.
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
	err := admin(clients[1], bson.D{{Key: "mergeChunks", Value: ns}, {Key: "bounds", Value: bson.A{left["min"], right["max"]}}})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 117 {
		t.Fatalf("mergeChunks through node-b of a chunk node-a is moving: %v, want 117 ConflictingOperationInProgress", err)
	}
	setClusterFailPoint(t, clients[0], "pauseMoveBeforeFlip", "off")
	if err := <-done; err != nil {
		t.Fatalf("moveChunk after the refused merge: %v", err)
	}
	if ch := chunkAt(t, clients[0], ns, right["min"]); ch == nil || ch["shard"] != "shard-1" || fmt.Sprint(ch["max"]) != fmt.Sprint(right["max"]) {
		t.Fatalf("the moved chunk on node-a: %v", ch)
	}
	checkExactlyOnce(t, clients, dbn, "c", ids)

	// Split left through node-c, merged back through node-b: both run by node-a.
	if err := admin(clients[2], bson.D{{Key: "split", Value: ns}, {Key: "bounds", Value: bson.A{left["min"], left["max"]}}}); err != nil {
		t.Fatalf("split through node-c: %v", err)
	}
	if ch := chunkAt(t, clients[2], ns, left["min"]); ch == nil || fmt.Sprint(ch["max"]) == fmt.Sprint(left["max"]) {
		t.Fatalf("node-c right after its split: %v", ch)
	}
	if err := admin(clients[1], bson.D{{Key: "mergeChunks", Value: ns}, {Key: "bounds", Value: bson.A{left["min"], left["max"]}}}); err != nil {
		t.Fatalf("mergeChunks through node-b: %v", err)
	}
	if ch := chunkAt(t, clients[1], ns, left["min"]); ch == nil || ch["shard"] != "shard-0" || fmt.Sprint(ch["max"]) != fmt.Sprint(left["max"]) {
		t.Fatalf("node-b right after its merge: %v", ch)
	}

	// And mergeAllChunksOnShard through node-c, of a split left.
	if err := admin(clients[0], bson.D{{Key: "split", Value: ns}, {Key: "bounds", Value: bson.A{left["min"], left["max"]}}}); err != nil {
		t.Fatalf("split through node-a: %v", err)
	}
	if err := admin(clients[2], bson.D{{Key: "mergeAllChunksOnShard", Value: ns}, {Key: "shard", Value: "shard-0"}}); err != nil {
		t.Fatalf("mergeAllChunksOnShard through node-c: %v", err)
	}
	if ch := chunkAt(t, clients[2], ns, left["min"]); ch == nil || ch["shard"] != "shard-0" || fmt.Sprint(ch["max"]) != fmt.Sprint(left["max"]) {
		t.Fatalf("node-c right after its mergeAllChunksOnShard: %v", ch)
	}
	checkExactlyOnce(t, clients, dbn, "c", ids)
}

// chunkAt returns the chunk of ns starting at lo as c's config.chunks lists it (nil: none).
func chunkAt(t *testing.T, c *mongo.Client, ns string, lo any) bson.M {
	t.Helper()
	for _, ch := range clusterChunks(t, c, ns) {
		if fmt.Sprint(ch["min"]) == fmt.Sprint(lo) {
			return ch
		}
	}
	return nil
}
