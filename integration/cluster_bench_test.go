package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// benchDocs is how many documents the cluster benchmarks load.
const benchDocs = 3000

// loadBench inserts benchDocs documents {_id, tenant, n, pad} into db.c through c.
func loadBench(b *testing.B, c *mongo.Client, db string) {
	b.Helper()
	docs := make([]any, benchDocs)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "tenant", Value: fmt.Sprintf("t%d", i%97)},
			{Key: "n", Value: int32(i)}, {Key: "pad", Value: string(make([]byte, 200))}}
	}
	if _, err := c.Database(db).Collection("c").InsertMany(context.Background(), docs, options.InsertMany().SetOrdered(false)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkClusterPointRead: a find by _id of an unsharded collection, which lives on
// node-a's shard, through node-a (the owner) and through node-b (one internal hop), in the
// same run:
//
//	go test ./integration -run '^$' -bench ClusterPointRead -benchtime 3000x
func BenchmarkClusterPointRead(b *testing.B) {
	_, nodes := startClusterNodes(b, 2)
	a, o := nodes[0].client(b), nodes[1].client(b)
	db := "benchpoint"
	loadBench(b, a, db)
	for _, tc := range []struct {
		name string
		c    *mongo.Client
	}{{"Owner", a}, {"OtherNode", o}} {
		b.Run(tc.name, func(b *testing.B) {
			coll := tc.c.Database(db).Collection("c")
			i := 0
			for b.Loop() {
				var d bson.M
				if err := coll.FindOne(context.Background(), bson.D{{Key: "_id", Value: int32(i % benchDocs)}}).Decode(&d); err != nil {
					b.Fatal(err)
				}
				i += 7
			}
		})
	}
}

// BenchmarkClusterScatter: a query no shard key fixes ($group over a range of n, which
// every partition holds part of), on a collection sharded over three nodes (one shard
// each) against the same collection on one node with one shard:
//
//	go test ./integration -run '^$' -bench ClusterScatter -benchtime 300x
func BenchmarkClusterScatter(b *testing.B) {
	_, nodes := startClusterNodes(b, 3)
	single := startServer(b)
	pipeline := mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 500}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$tenant"}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$n"}}}}}},
	}
	for _, tc := range []struct {
		name string
		srv  *server
	}{{"ThreeNodes", nodes[0]}, {"OneNode", single}} {
		b.Run(tc.name, func(b *testing.B) {
			c := tc.srv.client(b)
			db := "benchscatter"
			waitShards := tc.name == "ThreeNodes"
			if waitShards {
				for { // until the node lists the three shards
					res := struct {
						Shards []bson.M `bson:"shards"`
					}{}
					if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "listShards", Value: 1}}).Decode(&res); err == nil && len(res.Shards) == 3 {
						break
					}
				}
			}
			if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "shardCollection", Value: db + ".c"},
				{Key: "key", Value: bson.D{{Key: "tenant", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 3}}).Err(); err != nil {
				b.Fatal(err)
			}
			loadBench(b, c, db)
			coll := c.Database(db).Collection("c")
			for b.Loop() {
				cur, err := coll.Aggregate(context.Background(), pipeline)
				if err != nil {
					b.Fatal(err)
				}
				var out []bson.M
				if err := cur.All(context.Background(), &out); err != nil || len(out) != 97 {
					b.Fatalf("%d groups, %v", len(out), err)
				}
			}
		})
	}
}
