package integration

import (
	"context"
	"os"
	"testing"
)

// TestDifferentialCluster is TestDifferentialShardedVsUnsharded on a cluster of three nodes
// (issue 17): the sharded collection spans the three nodes' shards, the unsharded one lives
// on node b's shard (its first insert came through node b), and every query, view query and
// validation step runs through node c, so that both collections are read and written on
// other nodes' shards through the internal commands; the validation phase's collections
// are created on node b and written (inserts, updates, deletes, findAndModify) through
// node c. The results must be the same. The queries are the first 100 of
// TestDifferentialShardedVsUnsharded's 300 (same seed and documents), which checks their
// semantics on one node: here they check the remote path (300 took ~160 s under -race);
// CLEAVE_LONG=1 (make differential-cluster) runs all 300.
func TestDifferentialCluster(t *testing.T) {
	t.Parallel()
	seed := diffSeed(t)
	nDocs, nQueries := 2000, 100
	if os.Getenv("CLEAVE_LONG") != "" {
		nQueries = 300
	}
	if *diffDocsFlag > 0 {
		nDocs = *diffDocsFlag
	}
	if *diffQueriesFlag > 0 {
		nQueries = *diffQueriesFlag
	}
	nQueries = max(nQueries, *diffQueryFlag+1)
	t.Logf("seed %d, %d documents, %d queries", seed, nDocs, nQueries)

	_, clients, dbn := shardedOverThree(t, "sharded", "deviceId", 12)
	if err := clients[1].Database(dbn).CreateCollection(context.Background(), diffPlainColl); err != nil {
		t.Fatal(err)
	}
	db := clients[2].Database(dbn)
	r := &diffRunner{ctx: context.Background(), plain: db.Collection(diffPlainColl), sharded: db.Collection("sharded"), shards: 3}
	r.load(t, diffDocs(seed, nDocs))

	r.runQueries(t, seed, nDocs, nQueries, 1, "")
	r.checkViews(t, seed, nDocs, nQueries)
	checkValidationVia(t, clients[1], db, seed) // created on node b, written through node c
}
