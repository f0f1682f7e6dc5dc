package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestClusterMoveCollection: moveCollection sent to a third node moves an unsharded
// collection from its node's shard to another node's while a workload inserts through the
// collection's own node and reads through another: the owner copies it, catches up and flips
// the ownership in etcd, so every acknowledged document is found exactly once through every
// node afterwards, on the new shard only. An empty sharded collection beside it is resharded
// (numInitialChunks, then forceRedistribution) and unsharded through mongosh on the three
// nodes (cluster_reshard_test.go has them under load).
func TestClusterMoveCollection(t *testing.T) {
	_, nodes := startClusterNodes(t, 3, "--partition-check-interval", "1h")
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	waitClusterShards(t, clients, 3)
	dbn := dbName(t)
	w := startClusterWriter(clients[1], dbn, "c", 0) // created unsharded on node-b's shard
	w.waitAcked(t, 300)
	from := collShards(t, clients[0], dbn, "c")
	if len(from) != 1 {
		t.Fatalf("the unsharded collection is on %v", from)
	}
	to := "shard-0"
	if from[0] == to {
		to = "shard-2"
	}
	if _, err := runCmd(t, clients[2].Database("admin"), bson.D{{Key: "moveCollection", Value: dbn + ".c"}, {Key: "toShard", Value: to}}); err != nil {
		t.Fatalf("moveCollection: %v", err)
	}
	w.mu.Lock()
	n := len(w.acked)
	w.mu.Unlock()
	w.waitAcked(t, n+200) // writes go on after the move, routed to the new owner
	acked := w.finish(t)
	checkExactlyOnce(t, clients, dbn, "c", acked)
	for i, c := range clients {
		if got := collShards(t, c, dbn, "c"); !slices.Equal(got, []string{to}) {
			t.Fatalf("node %d: after moveCollection to %s the collection is on %v", i, to, got)
		}
	}
	shardColl(t, clients[0], dbn+".s", "tenant")
	out := nodes[1].mongosh(t, dbn, "--eval", `print("reshard", sh.reshardCollection("`+dbn+`.s", {x: "hashed"}, false, {numInitialChunks: 4}).ok)`)
	if !strings.Contains(out, "reshard 1") {
		t.Fatalf("mongosh's sh.reshardCollection through node-b:\n%s", out)
	}
	checkClusterLayout(t, clients, dbn, "s", bson.M{"x": "hashed"})
	if got := clusterChunks(t, clients[1], dbn+".s"); len(got) != 4 {
		t.Fatalf("after reshardCollection with numInitialChunks 4: %d chunks", len(got))
	}
	// The same key again with forceRedistribution: laid out anew, in numInitialChunks
	// partitions over the three nodes' shards.
	out = nodes[0].mongosh(t, dbn, "--eval", `print("force", db.adminCommand({reshardCollection: "`+dbn+`.s", key: {x: "hashed"}, forceRedistribution: true, numInitialChunks: 3}).ok)`)
	if !strings.Contains(out, "force 1") {
		t.Fatalf("reshardCollection with forceRedistribution through node-a:\n%s", out)
	}
	for _, c := range clients {
		waitFor(t, 15*time.Second, "every node to see the new layout", func() bool {
			on := map[any]bool{}
			chunks := clusterChunks(t, c, dbn+".s")
			for _, ch := range chunks {
				on[ch["shard"]] = true
			}
			return len(chunks) == 3 && len(on) == 3
		})
	}
	out = nodes[2].mongosh(t, dbn, "--eval", `print("unshard", sh.unshardCollection("`+dbn+`.s", "shard-1").ok)`)
	if !strings.Contains(out, "unshard 1") {
		t.Fatalf("mongosh's sh.unshardCollection through node-c:\n%s", out)
	}
	checkClusterLayout(t, clients, dbn, "s", nil)
	if got := collShards(t, clients[0], dbn, "s"); !slices.Equal(got, []string{"shard-1"}) {
		t.Fatalf("after unshardCollection to shard-1 the collection is on %v", got)
	}
}
