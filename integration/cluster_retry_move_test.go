package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestClusterRetryAfterMove: a retryable update's statements are applied on the nodes that
// own their documents; the documents of one node then move to another node's shard; the same
// command sent again (the retry of a reply the client lost) is answered from the statements'
// records and applies nothing twice, wherever the documents now live, as MongoDB's chunk
// migrations carry the retryable writes' history with the chunk.
func TestClusterRetryAfterMove(t *testing.T) {
	t.Parallel()
	nodes, clients, dbn := shardedOverThree(t, "c", "_id", 3)
	ctx := context.Background()
	coll := clients[0].Database(dbn).Collection("c")
	const n = 30
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "n", Value: int32(0)}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	filters := make([]bson.D, n)
	for i := range filters {
		filters[i] = bson.D{{Key: "_id", Value: int32(i)}}
	}
	send := retryableIncs(t, nodes[0], dbn, "retry-after-move", filters)
	send("first execution")
	ns := dbn + ".c"
	for chunksOn(t, clients[0], ns, "shard-1") > 0 {
		moveChunkTo(t, clients[0], ns, "_id", "shard-1", "shard-2")
	}
	for chunksOn(t, clients[0], ns, "shard-2") > 0 {
		moveChunkTo(t, clients[0], ns, "_id", "shard-2", "shard-0")
	}
	send("retry after the moves")
	checkIncrementedOnce(t, coll, n)
}

// retryAfterReshard inserts n documents {_id, g, n: 0} into db.c (sharded on _id) through
// c, runs a retryable update of each by its _id and g (both shard keys) through s, then
// reshards the collection on g through reshard, sends the same update again through s (the
// retry of a reply the client lost) and checks that it applied nothing twice.
func retryAfterReshard(t *testing.T, s *server, c, reshard *mongo.Client, db string) {
	t.Helper()
	ctx := context.Background()
	const n = 30
	coll := c.Database(db).Collection("c")
	docs := make([]any, n)
	filters := make([]bson.D, n)
	for i := range n {
		g := fmt.Sprintf("g%d", i)
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "g", Value: g}, {Key: "n", Value: int32(0)}}
		filters[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "g", Value: g}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	send := retryableIncs(t, s, db, "retry-after-rshd", filters)
	send("first execution")
	if _, err := runCmd(t, reshard.Database("admin"), bson.D{{Key: "reshardCollection", Value: db + ".c"},
		{Key: "key", Value: bson.D{{Key: "g", Value: "hashed"}}}}); err != nil {
		t.Fatalf("reshardCollection: %v", err)
	}
	send("retry after the reshard")
	checkIncrementedOnce(t, coll, n)
}

// TestClusterRetryAfterReshard: a retryable update's statements are applied on the nodes
// owning their documents; reshardCollection through node-b (which gathers every partition,
// then copies each document to its place in the new layout over the three nodes) commits;
// the same command sent again through node-a is answered from the statements' records on
// the documents' new owners and applies nothing twice, as MongoDB's resharding carries
// config.transactions to the recipients.
func TestClusterRetryAfterReshard(t *testing.T) {
	t.Parallel()
	nodes, clients, dbn := shardedOverThree(t, "c", "_id", 3)
	retryAfterReshard(t, nodes[0], clients[0], clients[1], dbn)
}

// TestRetryAfterReshard: the same on one node of two shards, whose records the retry reads
// from every shard.
func TestRetryAfterReshard(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--shards", "2")
	c := s.client(t)
	dbn := dbName(t)
	shardColl(t, c, dbn+".c", "_id", bson.E{Key: "numInitialChunks", Value: 4})
	retryAfterReshard(t, s, c, c, dbn)
}

// retryableIncs returns a function that sends, through s, one retryable update of db.c (the
// session named session, txnNumber 1) with a statement $inc-ing n of the document each
// filter matches, and fails the test unless every statement matched: the first call runs
// the command, the later ones are its retries.
func retryableIncs(t *testing.T, s *server, db, session string, filters []bson.D) func(attempt string) {
	updates := bson.A{}
	for _, f := range filters {
		updates = append(updates, bson.D{{Key: "q", Value: f},
			{Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}}}})
	}
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte(session)}}}
	cmd := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: updates},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: db}}
	return func(attempt string) {
		t.Helper()
		reply := opMsg(t, s, cmd)
		if got, ok := reply.Lookup("n").Int32OK(); !ok || int(got) != len(filters) || reply.Lookup("ok").Double() != 1 {
			t.Fatalf("%s: %v", attempt, reply)
		}
	}
}

// checkIncrementedOnce checks that coll holds n documents, each with n = 1: no statement of
// retryableIncs's command was applied twice.
func checkIncrementedOnce(t *testing.T, coll *mongo.Collection, n int) {
	t.Helper()
	ctx := context.Background()
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		ID int32 `bson:"_id"`
		N  int32 `bson:"n"`
	}
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d documents, want %d", len(got), n)
	}
	for _, d := range got {
		if d.N != 1 {
			t.Errorf("_id %d has n = %d after the retry, want 1: its statement was applied again", d.ID, d.N)
		}
	}
}
