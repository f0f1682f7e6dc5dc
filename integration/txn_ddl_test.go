package integration

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestTxnDDLUndoneOnAbort creates collections in transactions, explicitly, with an index,
// and implicitly by an insert: others do not list them before the commit, an abort drops
// them, a commit keeps them.
func TestTxnDDLUndoneOnAbort(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	cl := srv.client(t)
	ctx := context.Background()
	db := cl.Database(dbName(t))
	names := func() []string {
		t.Helper()
		n, err := db.ListCollectionNames(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	run := func(commit bool, coll string, body func(sctx context.Context) error) {
		t.Helper()
		sess, err := cl.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.EndSession(ctx)
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := body(mongo.NewSessionContext(ctx, sess)); err != nil {
			t.Fatal(err)
		}
		if n := names(); slices.Contains(n, coll) {
			t.Fatalf("collections %v: %s listed before the commit", n, coll)
		}
		if commit {
			err = sess.CommitTransaction(ctx)
		} else {
			err = sess.AbortTransaction(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	explicit := func(sctx context.Context) error {
		if err := db.CreateCollection(sctx, "a"); err != nil {
			return err
		}
		_, err := db.Collection("a").Indexes().CreateOne(sctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}})
		return err
	}
	implicit := func(sctx context.Context) error {
		_, err := db.Collection("b").InsertOne(sctx, bson.D{{Key: "_id", Value: 1}})
		return err
	}
	run(false, "a", explicit)
	run(false, "b", implicit)
	if n := names(); len(n) != 0 {
		t.Fatalf("after the aborts: %v, want none", n)
	}
	run(true, "a", explicit)
	run(true, "b", implicit)
	n := names()
	slices.Sort(n)
	if !slices.Equal(n, []string{"a", "b"}) {
		t.Fatalf("after the commits: %v, want [a b]", n)
	}
	specs, err := db.Collection("a").Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 {
		t.Fatalf("indexes of a: %v, %v; want _id_ and x_1", specs, err)
	}
	if c, err := db.Collection("b").CountDocuments(ctx, bson.D{}); err != nil || c != 1 {
		t.Fatalf("b: %d documents, %v", c, err)
	}
}
