package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestClusterMoveFailsAtFlip: a move from node-a's shard to node-b's whose flip fails as
// refused (MongoDB's failMigrationCommit failpoint, on node-a: after the last copy pass, under
// the source's locks, the flip is not sent) answers MongoDB's InternalError for that failpoint,
// leaves the chunk on shard-0 through every node, and aborts on the destination at once:
// node-b deletes its copy and releases the DDL lock the incoming range held, so a DDL command
// through node-b with a maxTimeMS well under the two minutes an abandoned copy holds it runs
// (without the abort, it would wait for that lock and answer 50). The move then succeeds once
// the failpoint is off, and every node returns every document exactly once.
func TestClusterMoveFailsAtFlip(t *testing.T) {
	t.Parallel()
	_, nodes, clients, dbn, ns := startMoveCluster(t, "--test-commands", "--partition-check-interval", "1h")
	ctx := context.Background()
	ids := insertTenants(t, clients[2], dbn, "c", 600)
	target := lastChunkOn(t, clients[0], ns, "shard-0")
	if target == nil {
		t.Fatal("no chunk on shard-0")
	}
	move := bson.D{{Key: "moveChunk", Value: ns}, {Key: "bounds", Value: bson.A{target["min"], target["max"]}}, {Key: "to", Value: "shard-1"}}

	setClusterFailPoint(t, clients[0], "failMigrationCommit", "alwaysOn")
	err := clients[2].Database("admin").RunCommand(ctx, move).Err()
	if n := setClusterFailPoint(t, clients[0], "failMigrationCommit", "off"); n != 1 {
		t.Fatalf("failMigrationCommit failed %d flips, want 1", n)
	}
	if code := commandCode(err); code != 1 || !strings.Contains(err.Error(), "Failing _recvChunkCommit due to failpoint") {
		t.Fatalf("moveChunk whose flip failed: %v, want 1 InternalError", err)
	}
	for i, c := range clients {
		if ch := chunkAt(t, c, ns, target["min"]); ch == nil || ch["shard"] != "shard-0" || fmt.Sprint(ch["max"]) != fmt.Sprint(target["max"]) {
			t.Fatalf("node %d after the failed move: %v, want the chunk on shard-0", i, ch)
		}
	}
	if !strings.Contains(nodes[1].log.String(), "a move into this node failed; its copy is deleted") {
		t.Fatal("node-b did not delete the copy of the failed move")
	}
	if _, err := runCmd(t, clients[1].Database(dbn), bson.D{{Key: "create", Value: "after"}, {Key: "maxTimeMS", Value: 20000}}); err != nil {
		t.Fatalf("create through node-b after the failed move into it: %v", err)
	}
	checkExactlyOnce(t, clients, dbn, "c", ids)

	if err := clients[2].Database("admin").RunCommand(ctx, move).Err(); err != nil {
		t.Fatalf("moveChunk once the failpoint is off: %v", err)
	}
	if ch := chunkAt(t, clients[1], ns, target["min"]); ch == nil || ch["shard"] != "shard-1" {
		t.Fatalf("node-b after the move: %v, want the chunk on shard-1", ch)
	}
	checkExactlyOnce(t, clients, dbn, "c", ids)
}
