package integration

import (
	"context"
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
