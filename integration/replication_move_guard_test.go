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

// TestReplicationMoveDestinationLeaderKilled: a move between two replicated shards led by
// different nodes is paused just before its flip (pauseMoveBeforeFlip, on the source's
// leader, after the last copy pass); the destination's leader is SIGKILLed meanwhile and
// another replica takes over, publishes itself and repairs the shard, deleting the copy it
// does not own. The killed node's registration outlives the test's wait (a 30 s lease), so
// only the leader record tells the flip that its copy is gone: released, the flip is refused,
// the move fails with 117 and the source keeps the chunk; no acknowledged document is lost.
func TestReplicationMoveDestinationLeaderKilled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kill rounds are slow")
	}
	_, nodes, _ := replicatedNodes(t, 3, "--test-commands", "--etcd-lease-ttl", "30s",
		"--partition-check-interval", "1h")
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	from, to, src, dst := -1, -1, -1, -1
	leaders := []int{shardLeaderIndex(t, clients[0], 0), shardLeaderIndex(t, clients[0], 1), shardLeaderIndex(t, clients[0], 2)}
	for a := range leaders {
		for b := range leaders {
			if from < 0 && leaders[a] != leaders[b] {
				from, to, src, dst = a, b, leaders[a], leaders[b]
			}
		}
	}
	if from < 0 {
		t.Fatalf("every shard is led by node %d: no move between two nodes", leaders[0])
	}
	dbn := dbName(t)
	ns := dbn + ".c"
	shardColl(t, clients[src], ns, "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	ids := insertTenants(t, clients[src], dbn, "c", 600)
	fromName, toName := fmt.Sprintf("shard-%d", from), fmt.Sprintf("shard-%d", to)
	target := lastChunkOn(t, clients[src], ns, fromName)
	if target == nil {
		t.Fatalf("no chunk on %s", fromName)
	}

	setClusterFailPoint(t, clients[src], "pauseMoveBeforeFlip", "alwaysOn")
	done := make(chan error, 1)
	go func() {
		done <- clients[src].Database("admin").RunCommand(context.Background(), bson.D{{Key: "moveChunk", Value: ns},
			{Key: "bounds", Value: bson.A{target["min"], target["max"]}}, {Key: "to", Value: toName}}).Err()
	}()
	waitFor(t, 30*time.Second, "the move reaches its flip", func() bool {
		return setClusterFailPoint(t, clients[src], "pauseMoveBeforeFlip", "alwaysOn") >= 1
	})
	nodes[dst].kill()
	var alive []*mongo.Client
	for i, c := range clients {
		if i != dst {
			alive = append(alive, c)
		}
	}
	waitFor(t, 30*time.Second, "a new leader of "+toName, func() bool {
		l := listReplicas(t, clients[src])[to].leaderOf()
		return l != "" && int(l[len(l)-1]-'a') != dst
	})
	time.Sleep(2 * time.Second) // the new leader's repair runs after it publishes itself
	setClusterFailPoint(t, clients[src], "pauseMoveBeforeFlip", "off")

	err := <-done
	checkExactlyOnce(t, alive, dbn, "c", ids)
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 117 {
		t.Fatalf("moveChunk after the destination's leader died: %v, want 117 ConflictingOperationInProgress", err)
	}
	for _, ch := range clusterChunks(t, clients[src], ns) {
		if ch["min"].(bson.D)[0].Value == target["min"].(bson.D)[0].Value && ch["shard"] != fromName {
			t.Fatalf("the chunk moved to %v", ch["shard"])
		}
	}
}
