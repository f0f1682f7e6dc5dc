package integration

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// dig returns the value at path in a decoded reply (documents by key, arrays by index),
// failing the test when a step is missing.
func dig(t *testing.T, v any, path ...string) any {
	t.Helper()
	for i, k := range path {
		switch x := v.(type) {
		case bson.M:
			v = x[k]
		case bson.D:
			v = asM(x)[k]
		case bson.A:
			n, err := strconv.Atoi(k)
			if err != nil || n >= len(x) {
				t.Fatalf("explain: no element %v", path[:i+1])
			}
			v = x[n]
		default:
			t.Fatalf("explain: %v is a %T", path[:i], v)
		}
		if v == nil {
			t.Fatalf("explain: no field %v", path[:i+1])
		}
	}
	return v
}

// shardRead is what one shard of an explained read did.
type shardRead struct {
	Shard, Conn                 string
	Returned, Keys, DocsScanned int64
}

// explainShards runs cmd's explain (executionStats) through c and returns the winning plan's
// stage and, per shard, its connectionString and what it read.
func explainShards(t *testing.T, c *mongo.Client, db string, cmd bson.D) (string, []shardRead) {
	t.Helper()
	res, err := runCmd(t, c.Database(db), bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "executionStats"}})
	if err != nil {
		t.Fatalf("explain %v: %v", cmd, err)
	}
	plans := dig(t, res, "queryPlanner", "winningPlan", "shards").(bson.A)
	stats := dig(t, res, "executionStats", "executionStages", "shards").(bson.A)
	if len(plans) != len(stats) {
		t.Fatalf("%d shards planned, %d with statistics", len(plans), len(stats))
	}
	out := make([]shardRead, len(plans))
	for i := range plans {
		k := strconv.Itoa(i)
		out[i] = shardRead{
			Shard: dig(t, plans, k, "shardName").(string), Conn: dig(t, plans, k, "connectionString").(string),
			Returned: asInt64(dig(t, stats, k, "nReturned")), Keys: asInt64(dig(t, stats, k, "totalKeysExamined")),
			DocsScanned: asInt64(dig(t, stats, k, "totalDocsExamined")),
		}
		if got := dig(t, stats, k, "shardName"); got != out[i].Shard {
			t.Fatalf("statistics of %v for plan of %s", got, out[i].Shard)
		}
	}
	return dig(t, res, "queryPlanner", "winningPlan", "stage").(string), out
}

// TestClusterExplainRemoteShards: explain through any node of a collection spanning three
// nodes shows each shard's plan with its owner's address, and the keys and documents each
// owner examined: the same numbers through every node, whether the node reads a shard
// itself or asks its owner. Targeted (SINGLE_SHARD) and scatter (SHARD_MERGE) finds, counts
// (of index keys alone too), a distinct scan, and an aggregate's per-shard part.
func TestClusterExplainRemoteShards(t *testing.T) {
	t.Parallel()
	nodes, clients, dbn := shardedOverThree(t, "users", "tenant", 6)
	const total = 90
	docs := make([]any, total)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "tenant", Value: fmt.Sprintf("t%d", i%7)}, {Key: "n", Value: int32(i)},
			{Key: "m", Value: int32(i)}, {Key: "g", Value: int32(i % 5)}}
	}
	if _, err := clients[0].Database(dbn).Collection("users").InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	if _, err := clients[0].Database(dbn).Collection("users").Indexes().CreateMany(context.Background(), []mongo.IndexModel{
		{Keys: bson.D{{Key: "m", Value: 1}}}, {Keys: bson.D{{Key: "g", Value: 1}}},
	}); err != nil {
		t.Fatal(err)
	}
	conn := func(shard string) string {
		k, _ := strconv.Atoi(shard[len("shard-"):])
		return shard + "/" + nodes[k].addr
	}
	cases := []struct {
		name     string
		cmd      bson.D
		stage    string
		shards   int
		keys     int64 // over the shards
		docs     int64
		returned int64
	}{
		{"ScatterCollScan", bson.D{{Key: "find", Value: "users"}, {Key: "filter", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 10}}}}}},
			"SHARD_MERGE", 3, 0, total, total - 10},
		{"ScatterByID", bson.D{{Key: "find", Value: "users"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 5}}}},
			"SHARD_MERGE", 3, 3, 1, 1},
		{"TargetedShardKey", bson.D{{Key: "find", Value: "users"}, {Key: "filter", Value: bson.D{{Key: "tenant", Value: "t3"}}}},
			"SINGLE_SHARD", 1, 0, 13, 13},
		// Shard key and _id fix the document's key: one point read, no index key.
		{"TargetedPointRead", bson.D{{Key: "find", Value: "users"}, {Key: "filter", Value: bson.D{{Key: "tenant", Value: "t3"}, {Key: "_id", Value: 10}}}},
			"SINGLE_SHARD", 1, 0, 1, 1},
		{"CountTargeted", bson.D{{Key: "count", Value: "users"}, {Key: "query", Value: bson.D{{Key: "tenant", Value: "t3"}}}},
			"SINGLE_SHARD", 1, 0, 13, 13},
		// An owner reads index keys alone for a count the index answers, and one entry per
		// value for a distinct, as the node that asks it would on its own shard.
		{"CountKeysOnly", bson.D{{Key: "count", Value: "users"}, {Key: "query", Value: bson.D{{Key: "m", Value: bson.D{{Key: "$lt", Value: 30}}}}}},
			"SHARD_MERGE", 3, 30, 0, 30},
		{"DistinctScan", bson.D{{Key: "distinct", Value: "users"}, {Key: "key", Value: "g"}}, "SHARD_MERGE", 3, 15, 15, 15},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var first []shardRead
			for i, c := range clients {
				stage, shards := explainShards(t, c, dbn, tc.cmd)
				var keys, docs, returned int64
				for _, s := range shards {
					keys, docs, returned = keys+s.Keys, docs+s.DocsScanned, returned+s.Returned
					if s.Conn != conn(s.Shard) {
						t.Fatalf("node %d: %s's connectionString %q, want %q", i, s.Shard, s.Conn, conn(s.Shard))
					}
				}
				if stage != tc.stage || len(shards) != tc.shards || keys != tc.keys || docs != tc.docs || returned != tc.returned {
					t.Fatalf("node %d: %s over %+v; want %s over %d shards, %d keys, %d docs examined, %d returned",
						i, stage, shards, tc.stage, tc.shards, tc.keys, tc.docs, tc.returned)
				}
				if tc.shards == 3 {
					for _, s := range shards {
						if s.Keys+s.DocsScanned == 0 {
							t.Fatalf("node %d: %s examined nothing: %+v", i, s.Shard, shards)
						}
					}
				}
				if i == 0 {
					first = shards
				} else if !reflect.DeepEqual(shards, first) {
					t.Fatalf("node %d explains\n%+v\nnode 0\n%+v", i, shards, first)
				}
			}
		})
	}

	// An aggregate: each shard's part, with its owner's host and what it examined.
	group := bson.D{{Key: "aggregate", Value: "users"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$tenant"}}}}}},
		{Key: "cursor", Value: bson.D{}}}
	for i, c := range clients {
		res, err := runCmd(t, c.Database(dbn), bson.D{{Key: "explain", Value: group}, {Key: "verbosity", Value: "executionStats"}})
		if err != nil {
			t.Fatalf("explain aggregate through node %d: %v", i, err)
		}
		var docs int64
		for k := range nodes {
			name := fmt.Sprintf("shard-%d", k)
			if host := dig(t, res, "shards", name, "host"); host != conn(name) {
				t.Fatalf("node %d: %s's host %v, want %s", i, name, host, conn(name))
			}
			n := asInt64(dig(t, res, "shards", name, "stages", "0", "$cursor", "executionStats", "totalDocsExamined"))
			if n == 0 {
				t.Fatalf("node %d: %s examined no document", i, name)
			}
			docs += n
		}
		if docs != total {
			t.Fatalf("node %d: the shards examined %d documents, want %d", i, docs, total)
		}
	}
}
