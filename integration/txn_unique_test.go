package integration

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestTxnUniqueKeyConflict checks with two driver sessions that two transactions cannot
// both commit one key of a unique index: the second writer gets 112 WriteConflict with
// TransientTransactionError at its insert, as in MongoDB, and its transaction is aborted.
// Then 8 clients race withTransaction inserts of one unique key, and of one _id: exactly one
// of each commits, the others end with E11000 once the winner's commit is in their snapshot.
func TestTxnUniqueKeyConflict(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	ctx := context.Background()
	cl := srv.client(t)
	db := cl.Database(dbName(t))
	coll := db.Collection("u")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "email", Value: 1}},
		Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	s1, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s1.EndSession(ctx)
	s2, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s2.EndSession(ctx)
	for _, s := range []*mongo.Session{s1, s2} {
		if err := s.StartTransaction(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := coll.InsertOne(mongo.NewSessionContext(ctx, s1), bson.D{{Key: "_id", Value: 1}, {Key: "email", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.InsertOne(mongo.NewSessionContext(ctx, s2), bson.D{{Key: "_id", Value: 2}, {Key: "email", Value: "x"}})
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(112) || !se.HasErrorLabel("TransientTransactionError") {
		t.Fatalf("second transaction's insert of the key: %v, want 112 WriteConflict with TransientTransactionError", err)
	}
	if err := s1.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s2.CommitTransaction(ctx); !hasCode(err, 251) {
		t.Fatalf("commit of the conflicting transaction: %v, want 251 NoSuchTransaction", err)
	}
	race := func(doc func(i int) bson.D) (committed int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := srv.client(t)
				sess, err := c.StartSession()
				if err != nil {
					t.Error(err)
					return
				}
				defer sess.EndSession(ctx)
				coll := c.Database(db.Name()).Collection("u")
				_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
					return coll.InsertOne(ctx, doc(i))
				})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					committed++
				case !hasCode(err, 11000):
					t.Errorf("client %d: %v, want success or E11000", i, err)
				}
			}()
		}
		wg.Wait()
		return committed
	}
	if n := race(func(i int) bson.D { return bson.D{{Key: "_id", Value: 10 + i}, {Key: "email", Value: "race"}} }); n != 1 {
		t.Fatalf("%d transactions committed the unique key, want 1", n)
	}
	if n := race(func(i int) bson.D { return bson.D{{Key: "_id", Value: "same"}, {Key: "email", Value: i}} }); n != 1 {
		t.Fatalf("%d transactions committed the _id, want 1", n)
	}
	for _, f := range []bson.D{{{Key: "email", Value: "x"}}, {{Key: "email", Value: "race"}}, {{Key: "_id", Value: "same"}}} {
		if n, err := coll.CountDocuments(ctx, f); err != nil || n != 1 {
			t.Fatalf("documents %v: %d, %v; want 1", f, n, err)
		}
	}
}
