package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestClusterSplitMergeThroughOtherNodes: split and mergeChunks of a chunk on shard-0 (node
// 0's) sent to the other nodes. The split (bounds through the driver on node 1: the owner
// finds the median; then mongosh's sh.splitAt on node 2) is run by the owner; every
// node's config.chunks shows the children on shard-0 as soon as the command returns to the
// node that sent it, and a moment later on the others. mergeChunks through node 2 joins them
// again. Every document is still read exactly once on every node.
func TestClusterSplitMergeThroughOtherNodes(t *testing.T) {
	t.Parallel()
	_, nodes, clients, dbn, ns := startMoveCluster(t, "--partition-check-interval", "1h")
	ids := insertTenants(t, clients[1], dbn, "c", 600)
	ctx := context.Background()
	admin := func(c *mongo.Client, cmd bson.D) error { return c.Database("admin").RunCommand(ctx, cmd).Err() }

	target := lastChunkOn(t, clients[0], ns, "shard-0")
	if target == nil {
		t.Fatal("no chunk on shard-0")
	}
	before := len(clusterChunks(t, clients[0], ns))
	if err := admin(clients[1], bson.D{{Key: "split", Value: ns}, {Key: "bounds", Value: bson.A{target["min"], target["max"]}}}); err != nil {
		t.Fatalf("split through node 1 of a chunk on node 0: %v", err)
	}
	left, _ := splitChildren(t, clients[1], ns, target)
	if left == nil {
		t.Fatalf("node 1's config.chunks right after the split: %v", clusterChunks(t, clients[1], ns))
	}
	waitChunkCount(t, clients, ns, before+1)
	for i, c := range clients {
		if l, _ := splitChildren(t, c, ns, target); l == nil {
			t.Fatalf("node %d: no children of %v on shard-0: %v", i, target, clusterChunks(t, c, ns))
		}
	}

	// mongosh's sh.splitAt on node 2: the left child, at the middle of its hash range.
	lo, okLo := left["min"].(bson.D)[0].Value.(int64)
	hi, okHi := left["max"].(bson.D)[0].Value.(int64)
	if !okLo || !okHi {
		t.Fatalf("the left child's bounds are not hashes: %v", left)
	}
	out := nodes[2].mongosh(t, "admin", "--eval", fmt.Sprintf(`printjson(sh.splitAt(%q, {tenant: NumberLong("%d")}))`, ns, lo/2+hi/2))
	if !strings.Contains(out, "ok: 1") {
		t.Fatalf("sh.splitAt through node 2: %s", out)
	}
	waitChunkCount(t, clients, ns, before+2)

	// Merge the three pieces back through node 2.
	if err := admin(clients[2], bson.D{{Key: "mergeChunks", Value: ns}, {Key: "bounds", Value: bson.A{target["min"], target["max"]}}}); err != nil {
		t.Fatalf("mergeChunks through node 2: %v", err)
	}
	waitChunkCount(t, clients, ns, before)
	for i, c := range clients {
		found := false
		for _, ch := range clusterChunks(t, c, ns) {
			if fmt.Sprint(ch["min"]) == fmt.Sprint(target["min"]) {
				found = ch["shard"] == "shard-0" && fmt.Sprint(ch["max"]) == fmt.Sprint(target["max"])
			}
		}
		if !found {
			t.Fatalf("node %d after the merge: %v", i, clusterChunks(t, c, ns))
		}
	}
	checkExactlyOnce(t, clients, dbn, "c", ids)
}

// splitChildren returns the two chunks on shard-0 that split parent into, as c lists them
// (nil, nil when it does not).
func splitChildren(t *testing.T, c *mongo.Client, ns string, parent bson.M) (left, right bson.M) {
	t.Helper()
	for _, ch := range clusterChunks(t, c, ns) {
		if ch["shard"] != "shard-0" {
			continue
		}
		if fmt.Sprint(ch["min"]) == fmt.Sprint(parent["min"]) && fmt.Sprint(ch["max"]) != fmt.Sprint(parent["max"]) {
			left = ch
		}
		if fmt.Sprint(ch["max"]) == fmt.Sprint(parent["max"]) && fmt.Sprint(ch["min"]) != fmt.Sprint(parent["min"]) {
			right = ch
		}
	}
	if left == nil || right == nil || fmt.Sprint(left["max"]) != fmt.Sprint(right["min"]) {
		return nil, nil
	}
	return left, right
}

// waitChunkCount waits until every node lists n chunks of ns.
func waitChunkCount(t *testing.T, clients []*mongo.Client, ns string, n int) {
	t.Helper()
	for i, c := range clients {
		waitFor(t, 15*time.Second, fmt.Sprintf("node %d lists %d chunks of %s", i, n, ns), func() bool {
			return len(clusterChunks(t, c, ns)) == n
		})
	}
}
