package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestClusterCursorPresentRemoteShard: a cursor of node-a over a collection on node-b's
// shard reads the present at each getMore (cursor_present_test.go): node-b's part of the
// read starts again, after the last document node-a returned, from a new snapshot.
func TestClusterCursorPresentRemoteShard(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 2)
	dbn := dbName(t)
	b := nodes[1].client(t).Database(dbn).Collection("c")
	presentDocs(t, b) // created by an insert on node-b: on node-b's shard
	a := nodes[0].client(t).Database(dbn).Collection("c")
	waitFor(t, 15*time.Second, "node-a reads node-b's collection", func() bool {
		n, err := a.CountDocuments(context.Background(), bson.D{})
		return err == nil && n == 4
	})
	cur, err := a.Find(context.Background(), bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	wantRest(t, "remote shard", cursorRest(t, cur, func() { presentWrites(t, a) }), "2:old", "3:new", "5:")
}
