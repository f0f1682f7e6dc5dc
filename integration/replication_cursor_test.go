package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestReplicationCursorAcrossLeaderChange: a find through one node over a collection whose
// one shard another node leads, reading in reverse natural order (a read whose part on the
// owner keeps its cursor between batches), goes on after that leader lost its leadership (its
// raft messages cut): the part's later batches come from the node that opened it, which keeps
// the cursor, not from the shard's new leader, which has none (they failed with
// CursorNotFound). Every document comes back once.
func TestReplicationCursorAcrossLeaderChange(t *testing.T) {
	t.Parallel()
	_, nodes, _ := replicatedNodes(t, 3, "--test-commands")
	ctx := context.Background()
	admin := nodes[0].client(t)
	const n = 5000 // more than two of the owner's batches (2,048 documents each)
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	if _, err := admin.Database(dbName(t)).Collection("docs").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	_, reads := explainShards(t, admin, dbName(t), bson.D{{Key: "find", Value: "docs"}})
	if len(reads) != 1 {
		t.Fatalf("the unsharded collection is read on %d shards", len(reads))
	}
	var shard int
	if _, err := fmt.Sscanf(reads[0].Shard, "shard-%d", &shard); err != nil {
		t.Fatalf("the collection's shard %q: %v", reads[0].Shard, err)
	}
	leader := shardLeaderIndex(t, admin, shard)
	router := (leader + 1) % len(nodes)
	c := nodes[router].client(t)
	cur, err := c.Database(dbName(t)).Collection("docs").Find(ctx, bson.D{},
		options.Find().SetHint(bson.D{{Key: "$natural", Value: -1}}).SetBatchSize(100))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cur.Close(ctx) }()
	seen := map[int32]bool{}
	next := func() {
		t.Helper()
		if !cur.Next(ctx) {
			t.Fatalf("the cursor ended after %d documents: %v", len(seen), cur.Err())
		}
		id := cur.Current.Lookup("_id").Int32()
		if seen[id] {
			t.Fatalf("_id %d returned twice", id)
		}
		seen[id] = true
	}
	next()

	victim := fmt.Sprintf("node-%c", 'a'+leader)
	raftFault(t, nodes, bson.E{Key: "isolate", Value: bson.A{victim}})
	t.Cleanup(func() { raftFault(t, nodes, bson.E{Key: "off", Value: true}) })
	waitFor(t, 60*time.Second, fmt.Sprintf("shard %d led by another node than %s", shard, victim), func() bool {
		l := listReplicas(t, c)[shard].leaderOf()
		return l != "" && l != victim
	})
	for len(seen) < n {
		next()
	}
	if cur.Next(ctx) {
		t.Fatalf("more than the %d documents: %v", n, cur.Current)
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
}

// raftFault sends _cleaveRaftFault with arg to every node (a partition is the same command on
// each), each until it answers.
func raftFault(t *testing.T, nodes []*server, arg bson.E) {
	t.Helper()
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	sendRaftFault(t, clients, arg)
}

// sendRaftFault sends _cleaveRaftFault with arg through each of clients (one per node, in
// node order), trying each for a while until it answers.
func sendRaftFault(t *testing.T, clients []*mongo.Client, arg bson.E) {
	t.Helper()
	cmd := bson.D{{Key: "_cleaveRaftFault", Value: 1}, arg}
	for i, c := range clients {
		var err error
		for range 10 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = c.Database("admin").RunCommand(ctx, cmd).Err()
			cancel()
			if err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("_cleaveRaftFault %v on %s: %v", arg, nodeName(i), err)
		}
	}
}
