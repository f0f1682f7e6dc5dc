package integration

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestTxnDriverTransfer runs the transfer: 8 clients move amounts between two
// accounts of one logical partition 1,000 times with the driver's WithTransaction, on two
// shards; the sum is conserved, and the conflicts (112 with TransientTransactionError) were
// retried by the driver.
func TestTxnDriverTransfer(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	c := srv.client(t)
	db := c.Database(dbName(t))
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "acct"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: db.Name() + ".acct"},
		{Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}}).Err(); err != nil {
		t.Fatal(err)
	}
	acct := db.Collection("acct")
	if _, err := acct.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "a"}, {Key: "tenant", Value: "t1"}, {Key: "bal", Value: 500}},
		bson.D{{Key: "_id", Value: "b"}, {Key: "tenant", Value: "t1"}, {Key: "bal", Value: 500}},
	}); err != nil {
		t.Fatal(err)
	}
	const clients, each = 8, 125
	var calls atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := srv.client(t)
			coll := cl.Database(db.Name()).Collection("acct")
			from, to := "a", "b"
			if i%2 == 1 {
				from, to = to, from
			}
			for range each {
				sess, err := cl.StartSession()
				if err != nil {
					errs <- err
					return
				}
				_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
					calls.Add(1)
					var doc bson.M
					if err := coll.FindOne(ctx, bson.D{{Key: "tenant", Value: "t1"}, {Key: "_id", Value: from}}).Decode(&doc); err != nil {
						return nil, err
					}
					if _, err := coll.UpdateOne(ctx, bson.D{{Key: "tenant", Value: "t1"}, {Key: "_id", Value: from}},
						bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: -3}}}}); err != nil {
						return nil, err
					}
					_, err := coll.UpdateOne(ctx, bson.D{{Key: "tenant", Value: "t1"}, {Key: "_id", Value: to}},
						bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: 3}}}})
					return nil, err
				})
				sess.EndSession(ctx)
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cur, err := acct.Find(ctx, bson.D{{Key: "tenant", Value: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		Bal int32 `bson:"bal"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Bal+docs[1].Bal != 1000 {
		t.Fatalf("balances %+v: the sum is not conserved", docs)
	}
	t.Logf("%d transfers took %d attempts (%d retried after a conflict)", clients*each, calls.Load(), calls.Load()-clients*each)
}

// TestTxnDriverAbortAndScope checks, with the driver, that an aborted transaction leaves
// nothing, that others do not see a transaction's writes before its commit, and that an
// operation reaching a second shard fails with 263 and aborts the transaction.
func TestTxnDriverAbortAndScope(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	c := srv.client(t)
	db := c.Database(dbName(t))
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: db.Name() + ".s"},
		{Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}}).Err(); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("s")
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := coll.CountDocuments(sctx, bson.D{{Key: "k", Value: "x"}}); err != nil || n != 1 {
		t.Fatalf("inside: %d, %v", n, err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "k", Value: "x"}}); err != nil || n != 0 {
		t.Fatalf("outside before commit: %d, %v", n, err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Fatalf("after abort: %d, %v", n, err)
	}
	// A read of every partition reaches both shards.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "y"}}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.Find(sctx, bson.D{})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 263 {
		t.Fatalf("find on every partition: %v, want 263 OperationNotSupportedInTransaction", err)
	}
	err = sess.CommitTransaction(ctx)
	if !errors.As(err, &ce) || ce.Code != 251 {
		t.Fatalf("commit after the refusal: %v, want 251 NoSuchTransaction", err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Fatalf("after the refused transaction: %d, %v", n, err)
	}
}

// TestTxnOutsideWriteWaits checks that a write outside any transaction to a document an
// open transaction wrote waits for the transaction to end, as MongoDB's does: maxTimeMS
// bounds the wait (50 MaxTimeMSExpired), and an unbounded write applies on top of the
// commit.
func TestTxnOutsideWriteWaits(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	cl := srv.client(t)
	ctx := context.Background()
	db := cl.Database(dbName(t))
	coll := db.Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	inc := func(n int) bson.D { return bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: n}}}} }
	if _, err := coll.UpdateOne(mongo.NewSessionContext(ctx, sess), bson.D{{Key: "_id", Value: 1}}, inc(1)); err != nil {
		t.Fatal(err)
	}
	_, err = runCmd(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: inc(10)}}}}, {Key: "maxTimeMS", Value: 200}})
	if !hasCode(err, 50) {
		t.Fatalf("bounded write to the transaction's document: %v, want 50 MaxTimeMSExpired", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, inc(100))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the write did not wait for the transaction: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatalf("commit: %v (the waiting write must not make it conflict)", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkDocs(t, coll, bson.D{{Key: "_id", Value: 1}}, 101, 1)
}
