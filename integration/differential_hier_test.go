package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestDifferentialHierarchicalVsUnsharded is TestDifferentialShardedVsUnsharded with the
// sharded collection on the hierarchical key {deviceId, metricType}: the generated queries
// that fix deviceId read its span only, those that fix both one logical partition, and
// every answer must equal the unsharded collection's.
func TestDifferentialHierarchicalVsUnsharded(t *testing.T) {
	t.Parallel()
	seed := diffSeed(t)
	nDocs, nQueries := 1000, 150
	if *diffDocsFlag > 0 {
		nDocs = *diffDocsFlag
	}
	if *diffQueriesFlag > 0 {
		nQueries = *diffQueriesFlag
	}
	t.Logf("seed %d, %d documents, %d queries", seed, nDocs, nQueries)
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := c.Database(dbName(t))
	key := bson.D{{Key: "deviceId", Value: "hashed"}, {Key: "metricType", Value: "hashed"}}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "shardCollection", Value: db.Name() + ".sharded"},
		{Key: "key", Value: key}, {Key: "numInitialChunks", Value: 16}}).Err(); err != nil {
		t.Fatal(err)
	}
	r := &diffRunner{ctx: context.Background(), plain: db.Collection(diffPlainColl), sharded: db.Collection("sharded")}
	r.load(t, diffDocs(seed, nDocs))
	r.runQueries(t, seed, nDocs, nQueries, 1, " (hierarchical key)")
}
