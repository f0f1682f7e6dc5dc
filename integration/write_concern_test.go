package integration

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// TestWriteConcernUnsatisfiable checks with the driver that a write concern one copy cannot
// satisfy is reported, as a MongoDB cluster of one data-bearing node per shard reports it:
// the write is applied and the driver sees writeConcernError UnsatisfiableWriteConcern 100,
// on an insert (w: 2) and on a transaction's commit (w: 10).
func TestWriteConcernUnsatisfiable(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	ctx := context.Background()
	cl := srv.client(t)
	db := cl.Database(dbName(t))
	w2 := db.Collection("c", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 2}))
	_, err := w2.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteConcernError == nil || we.WriteConcernError.Code != 100 ||
		we.WriteConcernError.Message != "Not enough data-bearing nodes" {
		t.Fatalf("insert with w: 2: %v, want writeConcernError 100 Not enough data-bearing nodes", err)
	}
	if _, err := db.Collection("c", options.Collection().SetWriteConcern(writeconcern.Majority())).InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatalf("insert with w: majority: %v", err)
	}
	sess, err := cl.StartSession(options.Session().SetDefaultTransactionOptions(
		options.Transaction().SetWriteConcern(&writeconcern.WriteConcern{W: 10})))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("c").InsertOne(mongo.NewSessionContext(ctx, sess), bson.D{{Key: "_id", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	err = sess.CommitTransaction(ctx)
	// The driver reports a commit's writeConcernError as a CommandError.
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 100 || ce.HasErrorLabel("UnknownTransactionCommitResult") {
		t.Fatalf("commit with w: 10: %v, want writeConcernError 100 (not UnknownTransactionCommitResult)", err)
	}
	if n, err := db.Collection("c").CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Fatalf("documents: %d, %v; want 3 (a writeConcernError undoes nothing)", n, err)
	}
}
