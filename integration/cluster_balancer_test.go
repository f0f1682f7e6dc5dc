package integration

import (
	"fmt"
	"strconv"
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
	// everyNode waits, in one mongosh (a mongosh costs a second or more of CPU to start),
	// until each node in turn says want: db = connect(uri) points sh at that node.
	everyNode := func(want string) {
		t.Helper()
		uris := make([]string, len(nodes))
		for i, n := range nodes {
			uris[i] = strconv.Quote(n.uri() + "admin")
		}
		nodes[0].mongosh(t, "admin", "--eval", fmt.Sprintf(balancerStateJS+`
for (const uri of [%s]) {
  db = connect(uri);
  const deadline = Date.now() + 15000;
  while (balancerState() !== %q) {
    if (Date.now() > deadline) { print(uri + " says " + balancerState() + ", want " + %[2]q); quit(1); }
    sleep(100);
  }
}`, strings.Join(uris, ", "), want))
	}
	everyNode("true full")
	nodes[1].mongosh(t, "admin", "--eval", balancerStateJS+`
sh.stopBalancer();
expectBalancer("false off", "after sh.stopBalancer() on the node it was sent to");`)
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

// balancerStateJS defines, in mongosh, balancerState(): what sh.getBalancerState() and
// balancerStatus's mode say on db's node, as "true full" or "false off"; and
// expectBalancer(want, when), which exits 1 (failing the test) unless it says want now.
const balancerStateJS = `const balancerState = () => sh.getBalancerState() + " " + db.adminCommand({balancerStatus: 1}).mode;
const expectBalancer = (want, when) => {
  const got = balancerState();
  if (got !== want) { print("balancer state " + when + ": " + got + ", want " + want); quit(1); }
};`
