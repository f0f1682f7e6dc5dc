package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// A stream opened on one node of three reads every node's shards: it sees the writes made
// through each node exactly once, in cluster-time order per document, and a stream resumed
// from its tokens after a node's SIGKILL and restart sees the rest, including what was
// written while the node was down to the shards of the others.
func TestClusterChangeStream(t *testing.T) {
	t.Parallel()
	_, nodes, clients, dbn := shardedOverThreeNodes(t, "users")
	ctx := context.Background()
	coll := func(i int) *mongo.Collection { return clients[i].Database(dbn).Collection("users") }
	cs, err := coll(0).Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	const per = 20
	for k := range 3 {
		for i := range per {
			id := k*per + i
			doc := bson.D{{Key: "_id", Value: id}, {Key: "tenant", Value: fmt.Sprintf("t%d", id%11)}}
			if _, err := coll(k).InsertOne(ctx, doc); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := coll(k).UpdateOne(ctx, bson.D{{Key: "_id", Value: k * per}, {Key: "tenant", Value: fmt.Sprintf("t%d", k*per%11)}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "by", Value: k}}}}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, n := range nodes {
				l := n.log.String()
				t.Logf("node %d log tail:\n%s", i, l[max(0, len(l)-6000):])
			}
		}
	})
	events := nextEvents(t, cs, 3*per+3)
	seen := map[string]bool{}
	for i, e := range events {
		key := fmt.Sprint(e.OperationType, "/", e.DocumentKey["_id"])
		if seen[key] {
			t.Fatalf("event %d (%s) seen twice", i, key)
		}
		seen[key] = true
		if e.OperationType == "update" && !seen[fmt.Sprint("insert/", e.DocumentKey["_id"])] {
			t.Fatalf("the update of %v comes before its insert", e.DocumentKey["_id"])
		}
	}
	// Node c dies; writes through node b go on to the shards of a and b; node c returns.
	nodes[2].kill()
	resumeAt := events[len(events)-1].ID
	written := 0
	for id := 1000; written < 5; id++ {
		doc := bson.D{{Key: "_id", Value: id}, {Key: "tenant", Value: fmt.Sprintf("t%d", id%11)}}
		if _, err := coll(1).InsertOne(ctx, doc); err == nil {
			written++
		}
	}
	nodes[2].restart()
	clients[2] = nodes[2].client(t)
	waitClusterShards(t, clients, 3)
	if _, err := coll(2).InsertOne(ctx, bson.D{{Key: "_id", Value: 2000}, {Key: "tenant", Value: "t1"}}); err != nil {
		t.Fatal(err)
	}
	rs, err := coll(1).Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(resumeAt))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rs.Close(ctx) }()
	rest := nextEvents(t, rs, written+1)
	for i, e := range rest {
		if e.OperationType != "insert" {
			t.Fatalf("resumed event %d: %s", i, e.OperationType)
		}
	}
	if rest[written].DocumentKey["_id"] != int32(2000) {
		t.Fatalf("the last resumed event is about %v, want 2000", rest[written].DocumentKey["_id"])
	}
}
