package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestClusterTxnKillSessionsReachesPinnedNode: killSessions, killAllSessions and
// killAllSessionsByPattern sent to the node that forwards a transaction kill it on the node
// the transaction runs on too: that node aborts it and closes its cursors, so a write
// outside the transaction to the document it changed goes through at once, the cursor it
// opened is gone, and a commit sent after the kill commits nothing.
func TestClusterTxnKillSessionsReachesPinnedNode(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 2)
	a, b := nodes[0].client(t), nodes[1].client(t)
	waitClusterShards(t, []*mongo.Client{a, b}, 2)
	ctx := context.Background()
	dbn := dbName(t)
	ca := a.Database(dbn).Collection("c")
	if _, err := ca.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "node-b to see the collection", func() bool {
		names, err := b.Database(dbn).ListCollectionNames(ctx, bson.D{})
		return err == nil && slices.Contains(names, "c")
	})
	cb := b.Database(dbn).Collection("c")
	for i, tc := range []struct {
		name string
		kill func(id bson.Raw) bson.D
	}{
		{"KillSessions", func(id bson.Raw) bson.D { return bson.D{{Key: "killSessions", Value: bson.A{id}}} }},
		{"KillAllSessions", func(bson.Raw) bson.D { return bson.D{{Key: "killAllSessions", Value: bson.A{}}} }},
		{"KillAllSessionsByPattern", func(bson.Raw) bson.D { return bson.D{{Key: "killAllSessionsByPattern", Value: bson.A{}}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := int32(10 * (i + 1))
			if _, err := ca.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: doc}, {Key: "v", Value: 0}},
				bson.D{{Key: "_id", Value: doc + 1}}, bson.D{{Key: "_id", Value: doc + 2}}}); err != nil {
				t.Fatal(err)
			}
			sess, err := b.StartSession()
			if err != nil {
				t.Fatal(err)
			}
			defer sess.EndSession(ctx)
			if err := sess.StartTransaction(); err != nil {
				t.Fatal(err)
			}
			sc := mongo.NewSessionContext(ctx, sess)
			set := func(v string) bson.D { return bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: v}}}} }
			if _, err := cb.UpdateOne(sc, bson.D{{Key: "_id", Value: doc}}, set("txn")); err != nil {
				t.Fatal(err)
			}
			// A cursor of the transaction, open on node-a with documents still to come.
			var cur struct {
				Cursor struct {
					ID int64 `bson:"id"`
				} `bson:"cursor"`
			}
			err = b.Database(dbn).RunCommand(sc, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: doc}}}}},
				{Key: "batchSize", Value: 1}}).Decode(&cur)
			if err != nil {
				t.Fatal(err)
			}
			cursorID := cur.Cursor.ID
			if cursorID == 0 {
				t.Fatal("the transaction's find returned no open cursor")
			}
			if err := b.Database("admin").RunCommand(ctx, tc.kill(sess.ID())).Err(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			// Node-a aborted the transaction: its lock on the document is gone.
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if _, err := ca.UpdateOne(wctx, bson.D{{Key: "_id", Value: doc}}, set("outside")); err != nil {
				t.Fatalf("a write after %s to the document the transaction changed: %v", tc.name, err)
			}
			// Its cursor is closed on node-a, where it lived.
			err = a.Database(dbn).RunCommand(ctx, bson.D{{Key: "getMore", Value: cursorID}, {Key: "collection", Value: "c"}}).Err()
			wantCode(t, err, 43, "")
			if err := sess.CommitTransaction(ctx); err == nil {
				t.Errorf("commitTransaction after %s succeeded", tc.name)
			}
			var got bson.M
			if err := ca.FindOne(ctx, bson.D{{Key: "_id", Value: doc}}).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if got["v"] != "outside" {
				t.Fatalf("after %s and a commit: %v, want v: outside", tc.name, got)
			}
		})
	}
}
