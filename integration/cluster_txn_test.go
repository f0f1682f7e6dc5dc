package integration

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestClusterTxnThroughAnotherNode: a transaction on a collection that lives on node-a's
// shard, sent through node-b (a driver names every node, as it names several mongoses), runs
// on node-a: node-b forwards its statements — the first, the getMores of its cursors, the
// commit — and answers what node-a answered. Its writes are invisible outside it until the
// commit and gone after an abort; a failed statement's error and labels reach the client.
func TestClusterTxnThroughAnotherNode(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 2)
	a, b := nodes[0].client(t), nodes[1].client(t)
	waitClusterShards(t, []*mongo.Client{a, b}, 2)
	ctx := context.Background()
	dbn := dbName(t)
	if _, err := a.Database(dbn).Collection("c").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 0}}, bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: 0}},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "node-b to see the collection", func() bool {
		names, err := b.Database(dbn).ListCollectionNames(ctx, bson.D{})
		return err == nil && slices.Contains(names, "c")
	})
	cb := b.Database(dbn).Collection("c")
	ca := a.Database(dbn).Collection("c")
	sess, err := b.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)

	// Committed: an insert, a read that needs getMores, an update.
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		if _, err := cb.InsertOne(sc, bson.D{{Key: "_id", Value: 3}, {Key: "v", Value: 0}}); err != nil {
			return nil, err
		}
		if n, err := ca.CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
			return nil, errors.New("the transaction's insert is visible outside it before the commit")
		}
		cur, err := cb.Find(sc, bson.D{}, options.Find().SetBatchSize(1))
		if err != nil {
			return nil, err
		}
		var all []bson.M
		if err := cur.All(sc, &all); err != nil || len(all) != 3 {
			return nil, errors.New("the transaction's read did not see its own insert over getMores")
		}
		_, err = cb.UpdateMany(sc, bson.D{}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}})
		return nil, err
	})
	if err != nil {
		t.Fatalf("transaction through node-b: %v", err)
	}
	if n, err := ca.CountDocuments(ctx, bson.D{{Key: "v", Value: 1}}); err != nil || n != 3 {
		t.Fatalf("after the commit, node-a counts %d updated documents (%v), want 3", n, err)
	}

	// Aborted: nothing of it stays.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sc := mongo.NewSessionContext(ctx, sess)
	if _, err := cb.InsertOne(sc, bson.D{{Key: "_id", Value: 4}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := cb.CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Fatalf("after the abort: %d documents (%v), want 3", n, err)
	}

	// A failed statement: its error reaches the client, and the transaction is over.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	_, err = cb.InsertOne(sc, bson.D{{Key: "_id", Value: 1}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("a duplicate _id in the transaction: %v, want E11000", err)
	}
	err = sess.CommitTransaction(ctx)
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 251 {
		t.Fatalf("commit after the failed statement: %v, want NoSuchTransaction 251", err)
	}
}

// TestClusterTxnEndSessionsReachesPinnedNode: a client that ends its session (endSessions)
// on the node that forwards its transaction ends it on the node the transaction runs on
// too: that node aborts the open transaction, so a commit sent after it commits nothing,
// and the transaction's locks no longer hold back the writes of others.
func TestClusterTxnEndSessionsReachesPinnedNode(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 2)
	a, b := nodes[0].client(t), nodes[1].client(t)
	waitClusterShards(t, []*mongo.Client{a, b}, 2)
	ctx := context.Background()
	dbn := dbName(t)
	ca := a.Database(dbn).Collection("c")
	if _, err := ca.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "node-b to see the collection", func() bool {
		names, err := b.Database(dbn).ListCollectionNames(ctx, bson.D{})
		return err == nil && slices.Contains(names, "c")
	})
	cb := b.Database(dbn).Collection("c")
	sess, err := b.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sc := mongo.NewSessionContext(ctx, sess)
	if _, err := cb.InsertOne(sc, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.UpdateOne(sc, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: "txn"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Database("admin").RunCommand(ctx, bson.D{{Key: "endSessions", Value: bson.A{sess.ID()}}}).Err(); err != nil {
		t.Fatalf("endSessions: %v", err)
	}
	// Node-a aborted the transaction: a write outside it to the document it changed goes
	// through at once, and the commit that follows the end finds no transaction.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := ca.UpdateOne(wctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: "outside"}}}}); err != nil {
		t.Fatalf("a write after endSessions to the document the transaction changed: %v", err)
	}
	if err := sess.CommitTransaction(ctx); err == nil {
		t.Error("commitTransaction after endSessions succeeded")
	}
	var got []bson.M
	cur, err := ca.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0]["v"] != "outside" {
		t.Fatalf("after endSessions and a commit: %v, want only {_id: 1, v: outside}", got)
	}
}
