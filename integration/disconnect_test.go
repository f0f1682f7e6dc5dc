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

// activeOps lists the commands $currentOp shows running on db (those of the observer's own
// connection, an aggregate, excluded).
func activeOps(t *testing.T, c *mongo.Client, db string) []bson.Raw {
	t.Helper()
	ctx := context.Background()
	cur, err := c.Database("admin").Aggregate(ctx, bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}},
		bson.D{{Key: "$match", Value: bson.D{{Key: "ns", Value: db + ".$cmd"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var ops []bson.Raw
	if err := cur.All(ctx, &ops); err != nil {
		t.Fatal(err)
	}
	return ops
}

// waitNoOps waits until no command runs on db, failing after timeout.
func waitNoOps(t *testing.T, c *mongo.Client, db string, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ops := activeOps(t, c, db)
		if len(ops) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still running %v after its client went away: %v", what, timeout, ops[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDisconnectCancelsCommand checks that a long insertMany and a long updateMany whose
// client goes away (the driver closes the connection when the operation's context is
// cancelled) stop on the server: $currentOp no longer lists them within a few seconds, and
// the collection stops changing.
func TestDisconnectCancelsCommand(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	observer := srv.client(t)
	worker := srv.client(t, options.Client().SetRetryWrites(false))
	dbn := dbName(t)
	coll := worker.Database(dbn).Collection("c")
	bg := context.Background()

	docs := make([]any, 100_000) // one write batch: one command on the server
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "n", Value: 0}, {Key: "pad", Value: "0123456789abcdef0123456789abcdef"}}
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { _, err := coll.InsertMany(ctx, docs); done <- err }()
	waitFor(t, 20*time.Second, "the insert to start", func() bool { return len(activeOps(t, observer, dbn)) > 0 })
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Logf("insertMany ended with %v (it may have finished before the cancel)", err)
	}
	waitNoOps(t, observer, dbn, 5*time.Second, "insertMany")
	counted := observer.Database(dbn).Collection("c")
	n1, err := counted.CountDocuments(bg, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	n2, _ := counted.CountDocuments(bg, bson.D{})
	if n1 != n2 {
		t.Fatalf("the collection still grows after the insert's client left: %d then %d documents", n1, n2)
	}
	t.Logf("insertMany stopped after %d of %d documents", n1, len(docs))
	if n1 < 10_000 { // too few to make the update long: top up
		if _, err := counted.InsertMany(bg, docs[n1:min(int(n1)+50_000, len(docs))], options.InsertMany().SetOrdered(false)); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel = context.WithCancel(bg)
	go func() {
		_, err := coll.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
		done <- err
	}()
	waitFor(t, 20*time.Second, "the update to start", func() bool { return len(activeOps(t, observer, dbn)) > 0 })
	cancel()
	<-done
	waitNoOps(t, observer, dbn, 5*time.Second, "updateMany")
	u1, _ := counted.CountDocuments(bg, bson.D{{Key: "n", Value: 1}})
	time.Sleep(500 * time.Millisecond)
	u2, _ := counted.CountDocuments(bg, bson.D{{Key: "n", Value: 1}})
	if u1 != u2 {
		t.Fatalf("documents still being updated after the update's client left: %d then %d", u1, u2)
	}
	t.Logf("updateMany stopped after %d documents", u1)
}
