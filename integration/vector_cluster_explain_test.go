package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestVectorSearchClusterValidateExplain checks, on a collection whose partitions are spread
// over three nodes, that validate through one node checks every node's vector search graphs
// (each node builds its shards' graphs for the check, none having been searched) and finds
// them sound, and that explain of a $vectorSearch through one node shows every shard's part
// with its owner's address: an HNSW walk or an exact search, the vectors it compared (every
// vector of the shard for exact: true) and the hits it found, which the router merged.
func TestVectorSearchClusterValidateExplain(t *testing.T) {
	t.Parallel()
	_, nodes, clients, dbn := shardedOverThreeNodes(t, "items")
	const n, dims = 600, 8
	r := rand.New(rand.NewPCG(5, 5))
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "tenant", Value: int32(i % 30)}, {Key: "v", Value: randomVector(r, dims)}}
	}
	db := clients[0].Database(dbn)
	if _, err := db.Collection("items").InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	createVectorIndex(t, db.Collection("items"), "vec", vectorDef("v", dims, "euclidean"))
	res, err := runCmd(t, db, bson.D{{Key: "validate", Value: "items"}})
	if err != nil || res["valid"] != true || len(res["errors"].(bson.A)) != 0 {
		t.Fatalf("validate: %v, %v", res, err)
	}
	for i, s := range nodes { // the log is written as the node goes: wait for the line
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d to build its shard's graph for validate", i), func() bool {
			return strings.Count(s.log.String(), "vector search graph built") == 1
		})
	}
	query := randomVector(r, dims)
	for _, exact := range []bool{false, true} {
		stage := vectorStage("vec", "v", query, 40, 10)
		if exact {
			stage = vectorStage("vec", "v", query, 0, 10, bson.E{Key: "exact", Value: true})
		}
		res, err := runCmd(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "items"},
			{Key: "pipeline", Value: bson.A{stage, bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 1}}}}}},
			{Key: "cursor", Value: bson.D{}}}}})
		if err != nil {
			t.Fatal(err)
		}
		checkVectorExplain(t, res, nodes, exact, n)
	}
}

// checkVectorExplain checks the shards of a $vectorSearch's explain: three, each on its own
// node, each with its search's figures; exact searches compare every vector once.
func checkVectorExplain(t *testing.T, res bson.M, nodes []*server, exact bool, n int) {
	t.Helper()
	if got := dig(t, res, "splitPipeline", "mergerPart", "1", "$limit"); fmt.Sprint(got) != "10" {
		t.Fatalf("mergerPart's $limit %v: %v", got, res["splitPipeline"])
	}
	shards := asM(dig(t, res, "shards").(bson.D))
	if len(shards) != 3 {
		t.Fatalf("explain shows %d shards: %v", len(shards), shards)
	}
	hosts := map[string]bool{}
	var examined, found int64
	for name := range shards {
		host := dig(t, shards, name, "host").(string)
		hosts[host] = true
		x := dig(t, shards, name, "stages", "0", "$vectorSearch", "explain")
		want := "hnsw"
		if exact {
			want = "exact"
		}
		if typ := dig(t, x, "type"); typ != want {
			t.Fatalf("%s: type %v, want %s", name, typ, want)
		}
		e, f := asInt64(dig(t, x, "vectorsExamined")), asInt64(dig(t, x, "nReturned"))
		if e <= 0 || f <= 0 || f > 10 {
			t.Fatalf("%s: examined %d, found %d", name, e, f)
		}
		examined, found = examined+e, found+f
	}
	for _, s := range nodes {
		if !hosts["shard-0/"+s.addr] && !hosts["shard-1/"+s.addr] && !hosts["shard-2/"+s.addr] {
			t.Fatalf("no shard on node %s: %v", s.addr, hosts)
		}
	}
	if exact && examined != int64(n) || found < 10 {
		t.Fatalf("exact %v: %d vectors examined of %d, %d found", exact, examined, n, found)
	}
}
