package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestClusterMergeRacesMove: a merge by hand sent to another node goes to the node owning the
// chunks, as a split does, which alone knows whether it is moving one of them, and waits for
// its move of the collection to end, as MongoDB's shard waits for a migration: while node-a's
// move of one of two adjacent chunks to node-b's shard waits just before its flip (the
// pauseMoveBeforeFlip failpoint, after its last copy pass), mergeChunks of the two through
// node-b with maxTimeMS answers 50 MaxTimeMSExpired once it passes and changes nothing;
// without it, it waits, and once the move commits answers 20 IllegalOperation (the chunks are
// no longer on one shard), while a merge through node-c of the halves of the chunk that stayed,
// which waited too, commits (before, both answered 117 ConflictingOperationInProgress at once).
// Then a merge through node-b of two chunks node-a owns commits on node-a, and node-b lists
// the merged chunk as soon as it answers; so does mergeAllChunksOnShard through node-c. Every
// node returns every document exactly once.
func TestClusterMergeRacesMove(t *testing.T) {
	_, nodes, clients, dbn, ns := startMoveCluster(t, "--test-commands", "--partition-check-interval", "1h")
	ctx := context.Background()
	admin := func(c *mongo.Client, cmd bson.D) error { return c.Database("admin").RunCommand(ctx, cmd).Err() }
	ids := insertTenants(t, clients[2], dbn, "c", 600)

	// Two adjacent chunks on shard-0, left and right: its last one, split at its median by its
	// owner; left split again in two.
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
	if err := admin(clients[0], bson.D{{Key: "split", Value: ns}, {Key: "bounds", Value: bson.A{left["min"], left["max"]}}}); err != nil {
		t.Fatalf("split of left: %v", err)
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
	across := bson.D{{Key: "mergeChunks", Value: ns}, {Key: "bounds", Value: bson.A{left["min"], right["max"]}}}
	err := admin(clients[1], append(slices.Clone(across), bson.E{Key: "maxTimeMS", Value: 1000}))
	if code := commandCode(err); code != 50 {
		t.Fatalf("mergeChunks through node-b, maxTimeMS 1000, of a chunk node-a is moving: %v, want 50 MaxTimeMSExpired", err)
	}
	if ch := chunkAt(t, clients[1], ns, left["min"]); ch == nil || ch["shard"] != "shard-0" || fmt.Sprint(ch["max"]) == fmt.Sprint(right["max"]) {
		t.Fatalf("node-b after the merge that timed out: %v", ch)
	}
	merges := make(chan error, 1)
	halves := make(chan error, 1)
	go func() { merges <- admin(clients[1], across) }()
	go func() {
		halves <- admin(clients[2], bson.D{{Key: "mergeChunks", Value: ns}, {Key: "bounds", Value: bson.A{left["min"], left["max"]}}})
	}()
	waitFor(t, 30*time.Second, "both merges to wait on node-a for its move", func() bool {
		return strings.Count(nodes[0].log.String(), "waiting for a move of the collection to end") >= 3
	})
	setClusterFailPoint(t, clients[0], "pauseMoveBeforeFlip", "off")
	if err := <-done; err != nil {
		t.Fatalf("moveChunk during which merges waited: %v", err)
	}
	err = <-merges
	if code := commandCode(err); code != 20 || !strings.Contains(err.Error(), "could not merge chunks, shard shard-0 does not contain a sequence of chunks that exactly fills the range") {
		t.Fatalf("mergeChunks through node-b across the chunk that moved: %v, want 20 IllegalOperation", err)
	}
	if err := <-halves; err != nil {
		t.Fatalf("mergeChunks through node-c of the halves of the chunk that stayed: %v", err)
	}
	if ch := chunkAt(t, clients[2], ns, left["min"]); ch == nil || ch["shard"] != "shard-0" || fmt.Sprint(ch["max"]) != fmt.Sprint(left["max"]) {
		t.Fatalf("node-c after its merge: %v", ch)
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

// commandCode returns the code of err, a command's failure (0: none, or another error).
func commandCode(err error) int32 {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return 0
}
