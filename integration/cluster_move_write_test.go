package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestClusterMultiWriteDuringMove: a multi update or delete on node-a has read its documents
// and is held before it locks them (the pauseMultiWriteBeforeLock failpoint) while a chunk
// of node-a's moves to node-b. Released, it finds the chunk's documents owned by another
// node: each is written on its new owner, once (it failed with 238, "cannot run operations
// on another node's shards", and wrote nothing of them). The update runs through node-a,
// the router's own part; the delete through node-c, whose part on node-a forwards them.
func TestClusterMultiWriteDuringMove(t *testing.T) {
	t.Parallel()
	_, _, clients, dbn, ns := startMoveCluster(t, "--test-commands")
	ctx := context.Background()
	ids := insertTenants(t, clients[2], dbn, "c", 300) // about 100 a node: one group each

	hits := bson.D{{Key: "$inc", Value: bson.D{{Key: "hits", Value: int32(1)}}}}
	updated := heldMultiWrite(t, clients, ns, "shard-1", func() (int64, error) {
		res, err := clients[0].Database(dbn).Collection("c").UpdateMany(ctx, bson.D{}, hits)
		if err == nil && res.ModifiedCount != res.MatchedCount {
			t.Errorf("updateMany: %d matched, %d modified", res.MatchedCount, res.ModifiedCount)
		}
		if err != nil {
			return 0, err
		}
		return res.MatchedCount, nil
	})
	if updated != int64(len(ids)) {
		t.Fatalf("updateMany during the move matched %d documents, want %d", updated, len(ids))
	}
	for i, c := range clients {
		n, err := c.Database(dbn).Collection("c").CountDocuments(ctx, bson.D{{Key: "hits", Value: int32(1)}})
		if err != nil || n != int64(len(ids)) {
			t.Fatalf("node %d counts %d documents with hits 1, %v; want %d", i, n, err, len(ids))
		}
	}
	checkExactlyOnce(t, clients, dbn, "c", ids)

	deleted := heldMultiWrite(t, clients, ns, "shard-2", func() (int64, error) {
		res, err := clients[2].Database(dbn).Collection("c").DeleteMany(ctx, bson.D{{Key: "hits", Value: int32(1)}})
		if err != nil {
			return 0, err
		}
		return res.DeletedCount, nil
	})
	if deleted != int64(len(ids)) {
		t.Fatalf("deleteMany during the move deleted %d documents, want %d", deleted, len(ids))
	}
	checkExactlyOnce(t, clients, dbn, "c", nil)
}

// heldMultiWrite runs write while node-a (clients[0]) holds multi writes before their locks,
// moves node-a's last chunk of ns to shard to once write is held there, then releases it and
// returns what write returns.
func heldMultiWrite(t *testing.T, clients []*mongo.Client, ns, to string, write func() (int64, error)) int64 {
	t.Helper()
	before := setClusterFailPoint(t, clients[0], "pauseMultiWriteBeforeLock", "alwaysOn")
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := write()
		done <- result{n, err}
	}()
	waitFor(t, 30*time.Second, "the multi write is held on node-a", func() bool {
		return setClusterFailPoint(t, clients[0], "pauseMultiWriteBeforeLock", "alwaysOn") > before
	})
	target := lastChunkOn(t, clients[0], ns, "shard-0")
	err := clients[1].Database("admin").RunCommand(context.Background(), bson.D{{Key: "moveChunk", Value: ns},
		{Key: "bounds", Value: bson.A{target["min"], target["max"]}}, {Key: "to", Value: to}}).Err()
	setClusterFailPoint(t, clients[0], "pauseMultiWriteBeforeLock", "off")
	if err != nil {
		t.Fatalf("moveChunk to %s: %v", to, err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("the multi write held during the move: %v", res.err)
	}
	return res.n
}
