package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// indexBuilds returns the names of db.coll's indexes that $indexStats through c shows
// building (it reads the catalog: it answers while a node is down).
func indexBuilds(t *testing.T, c *mongo.Client, db, coll string) []string {
	t.Helper()
	docs := aggAll(t, c.Database(db).Collection(coll),
		bson.A{bson.D{{Key: "$indexStats", Value: bson.D{}}}, bson.D{{Key: "$match", Value: bson.D{{Key: "building", Value: true}}}}})
	var names []string
	for _, d := range docs {
		if n, _ := d["name"].(string); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// hangIndexBuild starts createIndexes {key: 1} on db.coll through node k, holds it once its
// index is in the catalog (hangAfterStartingIndexBuild) and returns the build's result.
func hangIndexBuild(t *testing.T, clients []*mongo.Client, k int, db, coll, key string) <-chan error {
	t.Helper()
	setClusterFailPoint(t, clients[k], "hangAfterStartingIndexBuild", "alwaysOn")
	done := make(chan error, 1)
	go func() {
		_, err := clients[k].Database(db).Collection(coll).Indexes().CreateOne(context.Background(),
			mongo.IndexModel{Keys: bson.D{{Key: key, Value: 1}}})
		done <- err
	}()
	waitFor(t, 30*time.Second, fmt.Sprintf("node %d's build of %s_1 is in the catalog", k, key), func() bool {
		return setClusterFailPoint(t, clients[k], "hangAfterStartingIndexBuild", "alwaysOn") >= 1
	})
	for i, c := range clients {
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d sees the build", i), func() bool {
			return len(indexBuilds(t, c, db, coll)) == 1
		})
	}
	return done
}

// TestClusterRestartKeepsOthersIndexBuilds: an index build node-a runs on a collection
// sharded over three nodes is held in progress while node-b restarts; node-b's start aborts
// only its own unfinished builds (the catalog records each build's node), so node-a's build
// then completes and every node lists the index. A build whose node is gone (node-a killed,
// its lease expired) is removed by the partition manager while it is down, and once it is
// back a new build of the same index succeeds through another node.
func TestClusterRestartKeepsOthersIndexBuilds(t *testing.T) {
	t.Parallel()
	_, nodes, clients, dbn, _ := startMoveCluster(t, "--test-commands")
	insertTenants(t, clients[2], dbn, "c", 300)

	done := hangIndexBuild(t, clients, 0, dbn, "c", "tenant")
	nodes[1].stop()
	nodes[1].restart()
	clients[1] = nodes[1].client(t)
	waitClusterShards(t, clients, 3)
	setClusterFailPoint(t, clients[0], "hangAfterStartingIndexBuild", "off")
	if err := <-done; err != nil {
		t.Fatalf("node-a's build after node-b restarted: %v", err)
	}
	wantIndexes(t, clients, dbn, "c", 2)

	// node-a dies during a build: once its lease expires, the manager removes the build.
	done = hangIndexBuild(t, clients, 0, dbn, "c", "pad")
	nodes[0].kill()
	<-done
	for i, c := range clients[1:] {
		waitFor(t, 60*time.Second, fmt.Sprintf("node %d no longer lists the dead node's build", i+1), func() bool {
			return len(indexBuilds(t, c, dbn, "c")) == 0
		})
	}
	nodes[0].restart()
	clients[0] = nodes[0].client(t)
	waitClusterShards(t, clients, 3)
	if _, err := clients[1].Database(dbn).Collection("c").Indexes().CreateOne(context.Background(),
		mongo.IndexModel{Keys: bson.D{{Key: "pad", Value: 1}}}); err != nil {
		t.Fatalf("the same build through node-b: %v", err)
	}
	wantIndexes(t, clients, dbn, "c", 3)
}

// runningOps counts the operations $currentOp through c shows running command cmd on coll.
func runningOps(t *testing.T, c *mongo.Client, cmd, coll string) int {
	t.Helper()
	cur, err := c.Database("admin").Aggregate(context.Background(), bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}},
		bson.D{{Key: "$match", Value: bson.D{{Key: "command." + cmd, Value: coll}}}}})
	if err != nil {
		t.Fatalf("$currentOp: %v", err)
	}
	var ops []bson.M
	if err := cur.All(context.Background(), &ops); err != nil {
		t.Fatalf("$currentOp: %v", err)
	}
	return len(ops)
}

// TestClusterIndexBuildWaitsForMove: a move from node-a's shard to node-b's is held just
// before its flip (node-b holds the copy, not yet its own) while a unique index build starts
// through node-b. The destination holds its node's DDL lock from the move's begin to its
// commit, so the build waits for the move, then builds on the moved partition as node-b's
// own (without the lock it met the copy and checked its keys on node-a's shard, failing).
// Every node then counts every document through the new index. Then two builds run at once
// through two nodes, each node running its part of the other's: both succeed.
func TestClusterIndexBuildWaitsForMove(t *testing.T) {
	t.Parallel()
	_, _, clients, dbn, ns := startMoveCluster(t, "--test-commands")
	ctx := context.Background()
	ids := insertTenants(t, clients[2], dbn, "c", 600)
	target := lastChunkOn(t, clients[0], ns, "shard-0")
	setClusterFailPoint(t, clients[0], "pauseMoveBeforeFlip", "alwaysOn")
	moved := make(chan error, 1)
	go func() {
		moved <- clients[2].Database("admin").RunCommand(ctx, bson.D{{Key: "moveChunk", Value: ns},
			{Key: "bounds", Value: bson.A{target["min"], target["max"]}}, {Key: "to", Value: "shard-1"}}).Err()
	}()
	waitFor(t, 30*time.Second, "the move reaches its flip", func() bool {
		return setClusterFailPoint(t, clients[0], "pauseMoveBeforeFlip", "alwaysOn") >= 1
	})
	built := make(chan error, 1)
	go func() {
		_, err := clients[1].Database(dbn).Collection("c").Indexes().CreateOne(ctx, mongo.IndexModel{
			Keys: bson.D{{Key: "tenant", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetUnique(true)})
		built <- err
	}()
	var early error
	waitFor(t, 30*time.Second, "the build is running on node-b", func() bool {
		select {
		case early = <-built:
			return true
		default:
			return runningOps(t, clients[1], "createIndexes", "c") > 0
		}
	})
	setClusterFailPoint(t, clients[0], "pauseMoveBeforeFlip", "off")
	if err := <-moved; err != nil {
		t.Fatalf("moveChunk: %v", err)
	}
	err := early
	if err == nil {
		err = <-built
	}
	if err != nil {
		t.Fatalf("the index build during the move: %v", err)
	}
	wantIndexes(t, clients, dbn, "c", 2)
	for i, c := range clients {
		n, err := c.Database(dbn).Collection("c").CountDocuments(ctx, bson.D{{Key: "tenant", Value: bson.D{{Key: "$gte", Value: ""}}}},
			options.Count().SetHint("tenant_1__id_1"))
		if err != nil || n != int64(len(ids)) {
			t.Fatalf("node %d counts %d documents through the new index, %v; want %d", i, n, err, len(ids))
		}
	}
	checkExactlyOnce(t, clients, dbn, "c", ids)

	// Two builds through two nodes at once, each node's part of the other's running while
	// its own holds its DDL lock: neither waits for the other.
	insertTenants(t, clients[2], dbn, "d", 100)
	onA := hangIndexBuild(t, clients, 0, dbn, "c", "pad")
	onB := hangIndexBuild(t, clients, 1, dbn, "d", "tenant")
	setClusterFailPoint(t, clients[0], "hangAfterStartingIndexBuild", "off")
	setClusterFailPoint(t, clients[1], "hangAfterStartingIndexBuild", "off")
	if errA, errB := <-onA, <-onB; errA != nil || errB != nil {
		t.Fatalf("concurrent builds through node-a and node-b: %v, %v", errA, errB)
	}
	wantIndexes(t, clients, dbn, "c", 3)
	wantIndexes(t, clients, dbn, "d", 2)
}
