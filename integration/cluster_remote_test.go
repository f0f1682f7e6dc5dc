package integration

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// shardedOverThree starts three cluster nodes (with the extra flags given), shards db.coll
// (db is the test's) on {key: "hashed"} in chunks partitions and waits until every node sees
// them spread over the three: the nodes, a client of each, and the database's name.
func shardedOverThree(t *testing.T, coll, key string, chunks int, extra ...string) ([]*server, []*mongo.Client, string) {
	t.Helper()
	_, nodes := startClusterNodes(t, 3, extra...)
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	waitClusterShards(t, clients, 3)
	dbn := dbName(t)
	shardColl(t, clients[0], dbn+"."+coll, key, bson.E{Key: "numInitialChunks", Value: chunks})
	waitClusterChunks(t, clients, chunks, 3)
	return nodes, clients, dbn
}

// waitClusterShards waits until every node lists n shards, each with a host.
func waitClusterShards(t *testing.T, clients []*mongo.Client, n int) {
	t.Helper()
	for i, c := range clients {
		waitFor(t, 15*time.Second, fmt.Sprintf("node %d lists %d shards", i, n), func() bool {
			res, err := runCmd(t, c.Database("admin"), bson.D{{Key: "listShards", Value: 1}})
			return err == nil && len(res["shards"].(bson.A)) == n
		})
	}
}

// clusterView is what one node answers to the reads of TestClusterRemoteReadsWrites.
type clusterView struct {
	Count    int64
	IDs      []int32
	Tenant3  []bson.M
	Groups   []bson.M
	Distinct []string
}

// waitClusterChunks waits until every node's config.chunks lists n chunks over shards shards.
func waitClusterChunks(t *testing.T, clients []*mongo.Client, n, shards int) {
	t.Helper()
	ctx := context.Background()
	for i, c := range clients {
		waitFor(t, 15*time.Second, fmt.Sprintf("node %d sees %d chunks over %d shards", i, n, shards), func() bool {
			cur, err := c.Database("config").Collection("chunks").Find(ctx, bson.D{})
			if err != nil {
				t.Fatalf("config.chunks: %v", err)
			}
			var chunks []bson.M
			if err := cur.All(ctx, &chunks); err != nil {
				t.Fatal(err)
			}
			on := map[any]bool{}
			for _, ch := range chunks {
				on[ch["shard"]] = true
			}
			return len(chunks) == n && len(on) == shards
		})
	}
}

// readView runs the same reads through c.
func readView(t *testing.T, c *mongo.Client, db, coll string) clusterView {
	t.Helper()
	ctx := context.Background()
	col := c.Database(db).Collection(coll)
	var v clusterView
	var err error
	if v.Count, err = col.CountDocuments(ctx, bson.D{}); err != nil {
		t.Fatalf("count: %v", err)
	}
	// A scatter read paged in small batches (getMore through the owners' cursors), merged
	// by _id.
	cur, err := col.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(7))
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	var all []bson.M
	if err := cur.All(ctx, &all); err != nil {
		t.Fatalf("find all: %v", err)
	}
	for _, d := range all {
		v.IDs = append(v.IDs, d["_id"].(int32))
	}
	// A targeted read with a projection, sort and limit.
	cur, err = col.Find(ctx, bson.D{{Key: "tenant", Value: "t3"}}, options.Find().
		SetSort(bson.D{{Key: "_id", Value: -1}}).SetLimit(4).SetProjection(bson.D{{Key: "n", Value: 1}}))
	if err != nil {
		t.Fatalf("find t3: %v", err)
	}
	if err := cur.All(ctx, &v.Tenant3); err != nil {
		t.Fatal(err)
	}
	cur, err = col.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$tenant"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$n"}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		t.Fatalf("aggregate: %v", err)
	}
	if err := cur.All(ctx, &v.Groups); err != nil {
		t.Fatal(err)
	}
	res := col.Distinct(ctx, "tenant", bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 10}}}})
	if err := res.Decode(&v.Distinct); err != nil {
		t.Fatalf("distinct: %v", err)
	}
	return v
}

// TestClusterRemoteReadsWrites: a collection sharded over three nodes (one shard each) is
// written through every node and read the same through every node: counts, a scatter
// find paged across the owners' cursors, a targeted find, $group and distinct. A duplicate
// _id on another node's shard is a writeError with its index; a node that is down makes
// reads of its shard fail with HostUnreachable, and reads work again once it is back.
func TestClusterRemoteReadsWrites(t *testing.T) {
	t.Parallel()
	_, nodes, clients, dbn := shardedOverThreeNodes(t, "users")
	ctx := context.Background()

	// Writes through each node in turn, ordered and unordered.
	const total = 90
	for k := range 3 {
		docs := make([]any, 30)
		for i := range docs {
			id := k*30 + i
			docs[i] = bson.D{{Key: "_id", Value: int32(id)}, {Key: "tenant", Value: fmt.Sprintf("t%d", id%7)}, {Key: "n", Value: int32(id)}}
		}
		if _, err := clients[k].Database(dbn).Collection("users").InsertMany(ctx, docs, options.InsertMany().SetOrdered(k != 1)); err != nil {
			t.Fatalf("insert through node %d: %v", k, err)
		}
	}
	want := readView(t, clients[0], dbn, "users")
	if want.Count != total || len(want.IDs) != total || len(want.Groups) != 7 || len(want.Distinct) != 7 || len(want.Tenant3) != 4 {
		t.Fatalf("node 0 reads %+v", want)
	}
	for i, id := range want.IDs {
		if id != int32(i) {
			t.Fatalf("sorted find: position %d holds _id %d", i, id)
		}
	}
	for i := 1; i < 3; i++ {
		if got := readView(t, clients[i], dbn, "users"); !reflect.DeepEqual(got, want) {
			t.Fatalf("node %d reads\n%+v\nnode 0 reads\n%+v", i, got, want)
		}
	}

	// A duplicate _id routed to another node: a writeError at its index, the rest inserted.
	_, err := clients[1].Database(dbn).Collection("users").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: int32(1000)}, {Key: "tenant", Value: "t1"}},
		bson.D{{Key: "_id", Value: int32(5)}, {Key: "tenant", Value: "t5"}},
		bson.D{{Key: "_id", Value: int32(1001)}, {Key: "tenant", Value: "t2"}},
	}, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if !asBulk(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 1 || bwe.WriteErrors[0].Code != 11000 {
		t.Fatalf("duplicate through node-b: %v", err)
	}
	for i, c := range clients {
		if n, err := c.Database(dbn).Collection("users").CountDocuments(ctx, bson.D{}); err != nil || n != total+2 {
			t.Fatalf("count on node %d = %d, %v; want %d", i, n, err, total+2)
		}
	}

	// node-c down: a read that needs its shard fails with HostUnreachable (6); node-c back:
	// the same read answers as before.
	nodes[2].kill()
	_, err = clients[0].Database(dbn).Collection("users").CountDocuments(ctx, bson.D{})
	wantCode(t, err, 6, "shard-2 is on node node-c")
	nodes[2].restart()
	waitFor(t, 30*time.Second, "node-a counts every document again", func() bool {
		n, err := clients[0].Database(dbn).Collection("users").CountDocuments(ctx, bson.D{})
		return err == nil && n == total+2
	})
}

// asBulk reports whether err is a BulkWriteException, and sets it.
func asBulk(err error, out *mongo.BulkWriteException) bool {
	return errors.As(err, out)
}
