package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// cursorMetrics is serverStatus' metrics.cursor.
type cursorMetrics struct {
	TotalOpened int64 `bson:"totalOpened"`
	Open        struct {
		Total int64 `bson:"total"`
	} `bson:"open"`
}

// serverCursors reads metrics.cursor from serverStatus through c.
func serverCursors(t *testing.T, c *mongo.Client) cursorMetrics {
	t.Helper()
	var st struct {
		Metrics struct {
			Cursor cursorMetrics `bson:"cursor"`
		} `bson:"metrics"`
	}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatalf("serverStatus: %v", err)
	}
	return st.Metrics.Cursor
}

// TestClusterRemoteLimitedReadLeavesNoCursor: a read through node-a of node-b's shard whose
// limit the first batch fills (findOne, find with a limit) is whole in one round trip: node-b
// keeps no cursor for it, which node-a would have to kill with a second round trip. A read
// without a limit that does not fit in the first batch still continues on node-b's cursor.
func TestClusterRemoteLimitedReadLeavesNoCursor(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 2)
	dbn := dbName(t)
	bc := nodes[1].client(t)
	b := bc.Database(dbn).Collection("c")
	docs := make([]any, 300)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i % 7}}
	}
	if _, err := b.InsertMany(context.Background(), docs); err != nil { // node-b's shard
		t.Fatal(err)
	}
	a := nodes[0].client(t).Database(dbn).Collection("c")
	waitFor(t, 15*time.Second, "node-a reads node-b's collection", func() bool {
		n, err := a.CountDocuments(context.Background(), bson.D{})
		return err == nil && n == int64(len(docs))
	})
	before := serverCursors(t, bc)
	ctx := context.Background()
	for i := range 20 {
		var got struct{ V int }
		if err := a.FindOne(ctx, bson.D{{Key: "_id", Value: i}}).Decode(&got); err != nil || got.V != i%7 {
			t.Fatalf("findOne(%d) through node-a: %+v, %v", i, got, err)
		}
	}
	cur, err := a.Find(ctx, bson.D{{Key: "v", Value: 3}}, options.Find().SetLimit(5))
	if err != nil {
		t.Fatal(err)
	}
	var some []bson.Raw
	if err := cur.All(ctx, &some); err != nil || len(some) != 5 {
		t.Fatalf("find with limit 5 through node-a: %d documents, %v", len(some), err)
	}
	after := serverCursors(t, bc)
	if opened := after.TotalOpened - before.TotalOpened; opened != 0 {
		t.Errorf("node-b opened %d cursors for 21 reads whose first batch held their limit, want 0", opened)
	}
	// A read of all 300 documents in batches of 10: node-a's first batch is 10, node-b's part
	// goes on past its first batch on a cursor of node-b's, closed once it is done.
	cur, err = a.Find(ctx, bson.D{}, options.Find().SetBatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.Raw
	if err := cur.All(ctx, &all); err != nil || len(all) != len(docs) {
		t.Fatalf("find of all through node-a: %d documents, %v", len(all), err)
	}
	if m := serverCursors(t, bc); m.Open.Total != 0 {
		t.Errorf("node-b holds %d open cursors after every read through node-a ended, want 0", m.Open.Total)
	}
}

// TestClusterHopsDuringMoves: point reads and updates by _id through node-a, from many
// goroutines at once (the internal connections to node-b and node-c carry them pipelined),
// while partitions move between the three nodes' shards. Every read finds its document with
// a value no older than the last update that goroutine saw acknowledged, and in the end
// every document holds exactly the increments acknowledged (plus those whose outcome the
// client could not know), once.
func TestClusterHopsDuringMoves(t *testing.T) {
	t.Parallel()
	_, clients, dbn := shardedOverThree(t, "c", "_id", 6)
	ns := dbn + ".c"
	load := startIncLoad(t, clients[0].Database(dbn).Collection("c"), 12, 20, true)
	moved := moveChunkTo(t, clients[1], ns, "_id", "shard-0", "shard-1")
	moveChunkTo(t, clients[2], ns, "_id", "shard-1", "shard-2", moved)
	moveChunkTo(t, clients[0], ns, "_id", "shard-2", "shard-0")
	moveChunkTo(t, clients[1], ns, "_id", "shard-0", "shard-2")
	load.stop(t, clients, dbn)
}

// TestClusterRemoteReadStopsOnOwner: a read through node-a of node-b's shard that runs out
// of its maxTimeMS on node-a stops on node-b too (the pipelined connection carries a cancel
// message for it; before pipelining, closing the connection did): node-b's currentOp soon
// lists no _cleaveShardGet (the point read's compact request), though its failpoint would
// hold it for ten minutes. The connection then serves the next read.
func TestClusterRemoteReadStopsOnOwner(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 2, "--test-commands")
	dbn := dbName(t)
	bc := nodes[1].client(t)
	ctx := context.Background()
	if _, err := bc.Database(dbn).Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil { // node-b's shard
		t.Fatal(err)
	}
	a := nodes[0].client(t).Database(dbn).Collection("c")
	waitFor(t, 15*time.Second, "node-a reads node-b's collection", func() bool {
		n, err := a.CountDocuments(ctx, bson.D{})
		return err == nil && n == 1
	})
	err := bc.Database("admin").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "failCommand"},
		{Key: "mode", Value: "alwaysOn"}, {Key: "data", Value: bson.D{
			{Key: "failCommands", Value: bson.A{"_cleaveShardFind", "_cleaveShardGet"}},
			{Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 600_000}}}}).Err()
	if err != nil {
		t.Fatal(err)
	}
	found := make(chan error, 1)
	go func() {
		found <- a.Database().RunCommand(ctx, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}}},
			{Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}, {Key: "maxTimeMS", Value: 2000}}).Err()
	}()
	held := func() bool { // node-b runs node-a's part of the read
		var res struct{ Inprog []bson.Raw }
		if err := bc.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}}).Decode(&res); err != nil {
			t.Fatalf("currentOp: %v", err)
		}
		for _, op := range res.Inprog {
			if _, err := op.LookupErr("command", "_cleaveShardGet"); err == nil { // a point read's compact request
				return true
			}
		}
		return false
	}
	waitFor(t, 30*time.Second, "node-b's currentOp lists the read node-a sent", held)
	var ce mongo.CommandError
	if err := <-found; !errors.As(err, &ce) || ce.Code != 50 {
		t.Fatalf("find held on node-b with maxTimeMS 2000: %v, want MaxTimeMSExpired (50)", err)
	}
	waitFor(t, 30*time.Second, "node-b stops the read node-a gave up", func() bool { return !held() })
	if err := bc.Database("admin").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
		t.Fatalf("findOne after the cancelled one: %v", err)
	}
}
