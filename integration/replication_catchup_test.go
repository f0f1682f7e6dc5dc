package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestReplicationNewLeaderCatchesUp: a new leader of a shard serves only once its node's
// catalog holds every change the cluster committed before, so that it never takes writes
// for a range moved away from its shard. The catalog watches of two nodes are held
// (pauseCatalogWatch) while a partition moves away from a shard the third node leads, to
// another shard it leads; that node is killed, so nodes with the old map lead both shards.
// The documents then inserted through them are all found afterwards, through every node,
// and validate is clean. (The new leader's repair catches its catalog up within
// milliseconds of serving, so without the wait before serving this passes too but for a
// narrow window; what it proves is that a leader whose catalog lags serves, once caught up,
// the moved range's writes to their new owner, and that the wait does not stall it.)
func TestReplicationNewLeaderCatchesUp(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a kill round is slow")
	}
	_, nodes, _ := replicatedNodesShards(t, 3, 2, "--test-commands")
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	dbn := dbName(t)
	ns := dbn + ".docs"
	shardColl(t, clients[0], ns, "tenant", bson.E{Key: "numInitialChunks", Value: 12})
	waitReplicated(t, clients[0], 6, 3, 60*time.Second)

	// A node leading two shards, one of which holds a chunk: the move's source and its
	// destination (whose commit step would let a held watch through on another node).
	var from, to, l int
	found := false
	for s := 0; s < 6 && !found; s++ {
		l = shardLeaderIndex(t, clients[0], s)
		if len(chunkDocsOn(t, clients[0], ns, "shard-"+strconv.Itoa(s))) == 0 {
			continue
		}
		for d := 0; d < 6; d++ {
			if d != s && shardLeaderIndex(t, clients[0], d) == l {
				from, to, found = s, d, true
				break
			}
		}
	}
	if !found {
		t.Skip("no node leads two shards one of which holds a chunk: the leaders are spread one per shard")
	}
	for i := range nodes {
		if i != l {
			pauseWatch(t, clients[i], true)
			t.Cleanup(func() { pauseWatch(t, clients[i], false) })
		}
	}
	chunk := chunkDocsOn(t, clients[l], ns, "shard-"+strconv.Itoa(from))[0]
	if _, err := runCmd(t, clients[l].Database("admin"), bson.D{{Key: "moveChunk", Value: ns},
		{Key: "bounds", Value: bson.A{chunk["min"], chunk["max"]}}, {Key: "to", Value: "shard-" + strconv.Itoa(to)}}); err != nil {
		t.Fatalf("moveChunk shard-%d → shard-%d: %v", from, to, err)
	}
	nodes[l].kill()
	t.Logf("moved a chunk shard-%d → shard-%d through node %d, which led both, and killed it", from, to, l)

	// Inserts through the held nodes: every one retried until acknowledged.
	ctx := context.Background()
	var acked []int
	for id := range 400 {
		c := clients[(l+1+id%2)%3]
		doc := bson.D{{Key: "_id", Value: id}, {Key: "tenant", Value: fmt.Sprintf("t%d", id)}}
		var err error
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if _, err = c.Database(dbn).Collection("docs").InsertOne(ctx, doc); err == nil || mongo.IsDuplicateKeyError(err) {
				err = nil
				break
			}
		}
		if err != nil {
			t.Fatalf("insert %d: %v", id, err)
		}
		acked = append(acked, id)
	}
	for i := range nodes {
		if i != l {
			pauseWatch(t, clients[i], false)
		}
	}
	nodes[l].restart()
	clients[l] = nodes[l].client(t)
	waitReplicated(t, clients[l], 6, 3, 60*time.Second)
	for i, c := range clients {
		var ids []int
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d to find the %d documents", i, len(acked)), func() bool {
			ids = intIDs(t, c.Database(dbn).Collection("docs"))
			return slices.Equal(ids, acked)
		})
	}
	validateClean(t, clients[0].Database(dbn), "docs", "after the new leaders served")
}

// intIDs returns the int _ids of coll, sorted.
func intIDs(t *testing.T, coll *mongo.Collection) []int {
	t.Helper()
	cur, err := coll.Find(context.Background(), bson.D{})
	if err != nil {
		t.Logf("find: %v", err)
		return nil
	}
	var out []int
	for cur.Next(context.Background()) {
		out = append(out, int(cur.Current.Lookup("_id").Int32()))
	}
	if cur.Err() != nil {
		return nil
	}
	slices.Sort(out)
	return out
}
