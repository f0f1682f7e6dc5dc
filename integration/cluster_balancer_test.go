package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestClusterBalancerStop: in a two-node cluster, mongosh's sh.stopBalancer() sent to one node
// stops the elected manager's balancing moves wherever it runs, and every node says so
// (sh.getBalancerState(), which reads its own config.settings, and balancerStatus), across a
// restart of a node; moveChunk still moves; sh.startBalancer() sent to the other node lets
// the balancer even the shards out again.
func TestClusterBalancerStop(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 2, "--partition-check-interval", "50ms", "--balance-min-bytes", "0")
	state := func(i int) string {
		t.Helper()
		return strings.TrimSpace(nodes[i].mongosh(t, "admin", "--eval",
			`print(sh.getBalancerState(), db.adminCommand({balancerStatus: 1}).mode)`))
	}
	everyNode := func(want string) {
		t.Helper()
		for i := range nodes {
			waitFor(t, 15*time.Second, fmt.Sprintf("node %d to say %q", i, want), func() bool { return state(i) == want })
		}
	}
	everyNode("true full")
	nodes[1].mongosh(t, "admin", "--eval", `sh.stopBalancer()`)
	if got := state(1); got != "false off" {
		t.Fatalf("balancer state after sh.stopBalancer() on the node it was sent to: %q", got)
	}
	everyNode("false off")

	c := nodes[0].client(t)
	waitClusterShards(t, []*mongo.Client{c, nodes[1].client(t)}, 2)
	ns := smallCollOnShard1(t, c) // moveChunk moves with the balancer stopped
	time.Sleep(time.Second)       // twenty rounds of every node's partition manager
	if n := chunksOn(t, c, ns, "shard-1"); n != 2 {
		t.Fatalf("%d chunks on shard-1 with the balancer stopped, want 2: %v", n, clusterChunks(t, c, ns))
	}
	nodes[1].stop()
	nodes[1].restart()
	everyNode("false off")

	nodes[0].mongosh(t, "admin", "--eval", `sh.startBalancer()`)
	everyNode("true full")
	waitFor(t, 30*time.Second, "the balancer moves a chunk back to shard-0", func() bool {
		return chunksOn(t, c, ns, "shard-0") == 1
	})
	countSmallColl(t, c, ns)
}
