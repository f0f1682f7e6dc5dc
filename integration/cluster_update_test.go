package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// compactUpdates is serverStatus' sharding.compactUpdates: the single-document updates of
// other nodes' shards a node sent as compact requests (_cleaveShardUpdate), and those it
// served for others.
func compactUpdates(t *testing.T, c *mongo.Client) pointReads {
	t.Helper()
	var st struct {
		Sharding struct {
			CompactUpdates pointReads `bson:"compactUpdates"`
		} `bson:"sharding"`
	}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatalf("serverStatus: %v", err)
	}
	return st.Sharding.CompactUpdates
}

// updatesServedByAll sums the compact updates every node served.
func updatesServedByAll(t *testing.T, clients []*mongo.Client) int64 {
	t.Helper()
	n := int64(0)
	for _, c := range clients {
		n += compactUpdates(t, c).Served
	}
	return n
}

// TestClusterCompactUpdatesDuringMovesAndSplits: retryable $inc updates by _id through
// node-a, from many goroutines at once, of a collection sharded on hashed _id over three
// nodes, while its partitions split and move between the nodes. Two updates in three are
// another node's and go as compact requests (_cleaveShardUpdate); one planned on a map that
// a split or move changed is refused by the owner as stale, having written nothing, and
// node-a plans it again. Every acknowledged increment is applied exactly once (an increment
// whose outcome the client did not learn at most once), and serverStatus counts the compact
// requests node-a sent and the owners served.
func TestClusterCompactUpdatesDuringMovesAndSplits(t *testing.T) {
	t.Parallel()
	_, clients, dbn := shardedOverThree(t, "c", "_id", 3)
	ns := dbn + ".c"
	before, servedBefore := compactUpdates(t, clients[0]), updatesServedByAll(t, clients)
	load := startIncLoad(t, clients[0].Database(dbn).Collection("c"), 8, 40, false)
	splitChunkOf(t, clients, ns, 7)
	moved := moveChunkTo(t, clients[1], ns, "_id", "shard-0", "shard-1")
	splitChunkOf(t, clients, ns, 150)
	moveChunkTo(t, clients[2], ns, "_id", "shard-1", "shard-2", moved)
	splitChunkOf(t, clients, ns, 299)
	moveChunkTo(t, clients[0], ns, "_id", "shard-2", "shard-0")
	load.waitPasses(t)
	total, lost := load.stop(t, clients, dbn)
	after, servedAfter := compactUpdates(t, clients[0]), updatesServedByAll(t, clients)
	sent, served := after.Sent-before.Sent, servedAfter-servedBefore
	// Two updates in three are remote; some requests are refused as stale and sent again.
	if sent < int64(total)/3 || served < int64(total)/3 || served > sent {
		t.Fatalf("node-a sent %d compact updates and the nodes served %d, for %d acknowledged updates", sent, served, total)
	}
	t.Logf("%d updates acknowledged, %d unknown; %d compact requests sent, %d served", total, lost, sent, served)
}

// TestClusterCompactUpdateLostReply: a retryable $inc by _id through node-a, whose reply to
// the client is lost after the owner applied it (a proxy in front of node-a drops it); the
// driver retries with the same lsid and txnNumber, node-a sends the compact request again,
// and the owner answers from its record: the update is applied once and answered as the
// first execution was. The same statement sent once more through each node is answered
// from the record too.
func TestClusterCompactUpdateLostReply(t *testing.T) {
	t.Parallel()
	nodes, clients, dbn := shardedOverThree(t, "c", "_id", 3)
	ctx := context.Background()
	const total = 12
	docs := make([]any, total)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "n", Value: int32(0)}}
	}
	if _, err := clients[0].Database(dbn).Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	proxy := newReplyDropper(t, nodes[0].addr)
	coll := nodes[0].client(t, options.Client().ApplyURI(proxy.uri())).Database(dbn).Collection("c")
	remote := 0
	for id := range int32(total) {
		before := compactUpdates(t, clients[0]).Sent
		proxy.arm(nil, nil)
		res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}})
		if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
			t.Fatalf("retried $inc of %d: %+v, %v", id, res, err)
		}
		switch sent := compactUpdates(t, clients[0]).Sent - before; sent {
		case 0: // node-a's own shard
		case 2: // the first attempt and the retry, both compact
			remote++
		default:
			t.Fatalf("_id %d: node-a sent %d compact updates, want 0 (local) or 2 (an attempt and its retry)", id, sent)
		}
	}
	if remote == 0 {
		t.Fatal("no update went to another node")
	}
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("compact-update-1")}}}
	upd := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: int32(0)}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}}}},
	}}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: dbn}}
	for k, s := range nodes {
		reply := opMsg(t, s, upd)
		if n, ok := reply.Lookup("n").Int32OK(); !ok || n != 1 || reply.Lookup("ok").Double() != 1 {
			t.Fatalf("update through node %d (attempt %d): %v", k, k+1, reply)
		}
		if nm, ok := reply.Lookup("nModified").Int32OK(); !ok || nm != 1 {
			t.Fatalf("update through node %d (attempt %d) answers nModified %v, want the first execution's 1", k, k+1, reply)
		}
	}
	for i, c := range clients {
		for id := range int32(total) {
			want := int32(1)
			if id == 0 {
				want = 2
			}
			var got struct{ N int32 }
			if err := c.Database(dbn).Collection("c").FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil || got.N != want {
				t.Fatalf("node %d: _id %d has n = %d, %v; want %d (applied once)", i, id, got.N, err, want)
			}
		}
	}
}
