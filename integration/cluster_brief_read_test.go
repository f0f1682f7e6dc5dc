package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// holdWatch sets node c's pauseCatalogWatch failpoint, strict (what waits for a held change
// waits too), and returns its counts before: the waits for a held change since the hold
// began, and how many of them gave up.
func holdWatch(t *testing.T, c *mongo.Client, mode string) (waits, expired int64) {
	t.Helper()
	res, err := runCmd(t, c.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "pauseCatalogWatch"},
		{Key: "mode", Value: mode}, {Key: "data", Value: bson.D{{Key: "strict", Value: true}}}})
	if err != nil {
		t.Fatalf("pauseCatalogWatch %s: %v", mode, err)
	}
	return asInt64(res["count"]), asInt64(res["expired"])
}

// TestClusterBriefReadBehindCatalog: a point read through node-b of node-a's collection runs
// on node-a as a compact request (_cleaveShardGet) on a pipelined connection, on the
// connection's reader itself when node-a's catalog is at node-b's revision (a brief request).
// With node-a's catalog held behind node-b's (pauseCatalogWatch, strict: node-b created a
// collection since), two such reads wait on node-a for its catalog; they are handed to
// workers, so every other request of node-b's connections to node-a goes on meanwhile: the
// getMores of a cursor node-b reads from node-a answer while both reads still wait, none of
// which gives up (run on the readers, they would hold both connections until their wait
// ended, 10 s later, failed). Released, the reads answer their documents.
func TestClusterBriefReadBehindCatalog(t *testing.T) {
	t.Parallel()
	clients := twoNodesWithTestCommands(t)
	ctx := context.Background()
	dbn := dbName(t)
	const n = 10000 // several of the owner's batches (2,048 documents each)
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}}
	}
	if _, err := clients[0].Database(dbn).Collection("c").InsertMany(ctx, docs); err != nil { // node-a's shard
		t.Fatal(err)
	}
	c := clients[1].Database(dbn).Collection("c")
	waitFor(t, 30*time.Second, "node-b to read node-a's collection", func() bool {
		got, err := c.CountDocuments(ctx, bson.D{})
		return err == nil && got == n
	})
	cur, err := c.Find(ctx, bson.D{}, options.Find().SetBatchSize(100))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cur.Close(ctx) }()

	holdWatch(t, clients[0], "alwaysOn")
	t.Cleanup(func() { holdWatch(t, clients[0], "off") })
	if err := clients[1].Database(dbn).CreateCollection(ctx, "ahead"); err != nil { // node-b's catalog ahead of node-a's
		t.Fatal(err)
	}
	type found struct {
		doc bson.M
		err error
	}
	reads := make([]chan found, 2)
	for k := range reads {
		reads[k] = make(chan found, 1)
		go func() {
			var f found
			f.err = c.FindOne(ctx, bson.D{{Key: "_id", Value: int32(5 + k)}}).Decode(&f.doc)
			reads[k] <- f
		}()
	}
	waitFor(t, 30*time.Second, "both reads to wait on node-a for its catalog", func() bool {
		waits, _ := holdWatch(t, clients[0], "alwaysOn")
		return waits >= 2
	})

	seen := 0
	for cur.Next(ctx) {
		seen++
	}
	if err := cur.Err(); err != nil || seen != n {
		t.Fatalf("cursor through node-b while the reads wait: %d documents, %v", seen, err)
	}
	for k, r := range reads {
		select {
		case f := <-r:
			t.Fatalf("read %d ended before the cursor's getMores were answered: %v %v", k, f.doc, f.err)
		default:
		}
	}
	if _, expired := holdWatch(t, clients[0], "off"); expired != 0 {
		t.Fatalf("%d waits for node-a's catalog gave up while the cursor was read", expired)
	}
	for k, r := range reads {
		f := <-r
		if f.err != nil || f.doc["_id"] != int32(5+k) {
			t.Fatalf("read %d: %v %v, want {_id: %d}", k, f.doc, f.err, 5+k)
		}
	}
}
