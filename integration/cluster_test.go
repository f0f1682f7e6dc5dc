package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/cleavedb/cleave/cluster/etcdtest"
)

// clusterEtcd starts the etcd (in this process) of a test's cluster: one member. The cluster
// tests lose nodes, not etcd members (TestClusterEtcdMemberLossUnderLoad starts its own three),
// and each member is a raft group with its own WAL, run under the race detector.
// CLEAVE_TEST_ETCD_MEMBERS=3 starts three, to compare.
func clusterEtcd(t testing.TB) *etcdtest.Cluster {
	t.Helper()
	n := 1
	if v, err := strconv.Atoi(os.Getenv("CLEAVE_TEST_ETCD_MEMBERS")); err == nil && v > 0 {
		n = v
	}
	return etcdtest.Start(t, n)
}

// startClusterNodes starts an etcd (clusterEtcd) and n cleave nodes joined to it (with extra
// flags), one shard each unless extra says otherwise, in order: node-a first (it seeds the
// cluster's catalog).
func startClusterNodes(t testing.TB, n int, extra ...string) (*etcdtest.Cluster, []*server) {
	t.Helper()
	etcd := clusterEtcd(t)
	var nodes []*server
	for i := range n {
		nodes = append(nodes, startServer(t, append([]string{"--etcd", strings.Join(etcd.Endpoints(), ","),
			"--node-name", fmt.Sprintf("node-%c", 'a'+i), "--etcd-lease-ttl", "2s", "--replicas", "1"}, extra...)...))
	}
	return etcd, nodes
}

// shardedOverThreeNodes starts three nodes (startClusterNodes, with extra flags), a client of
// each, and a collection coll of a database named after the test, sharded on hashed tenant
// into six chunks spread over the three nodes' shards, which every node sees.
func shardedOverThreeNodes(t *testing.T, coll string, extra ...string) (*etcdtest.Cluster, []*server, []*mongo.Client, string) {
	t.Helper()
	etcd, nodes := startClusterNodes(t, 3, extra...)
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	waitClusterShards(t, clients, 3)
	dbn := dbName(t)
	shardColl(t, clients[0], dbn+"."+coll, "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	waitClusterChunks(t, clients, 6, 3)
	return etcd, nodes, clients, dbn
}

// collectionNames lists db's collections, sorted.
func collectionNames(t *testing.T, db *mongo.Database) []string {
	t.Helper()
	names, err := db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatalf("listCollections: %v", err)
	}
	slices.Sort(names)
	return names
}

// TestClusterSharedCatalog: three nodes share one catalog through etcd. A collection sharded
// on one node (its partitions spread over the three shards), and one created by an insert on
// another (on that node's shard), are seen by every node with the same partitions;
// listShards shows each shard with the node that owns it; every node reads and writes both.
func TestClusterSharedCatalog(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 3)
	ctx := context.Background()
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	dbn := dbName(t)

	// listShards, on any node: shard-i on node i, at its address.
	for i, c := range clients {
		waitFor(t, 15*time.Second, fmt.Sprintf("node %d lists the three shards with their hosts", i), func() bool {
			res, err := runCmd(t, c.Database("admin"), bson.D{{Key: "listShards", Value: 1}})
			if err != nil {
				t.Fatalf("listShards: %v", err)
			}
			shards := res["shards"].(bson.A)
			if len(shards) != 3 {
				return false
			}
			for k, sh := range shards {
				d := map[string]any{}
				for _, e := range sh.(bson.D) {
					d[e.Key] = e.Value
				}
				if d["_id"] != fmt.Sprintf("shard-%d", k) || d["host"] != fmt.Sprintf("shard-%d/%s", k, nodes[k].addr) {
					return false
				}
			}
			return true
		})
	}

	// Sharded on node-a: its partitions spread over the three shards, and every node sees them.
	shardColl(t, clients[0], dbn+".users", "tenant", bson.E{Key: "numInitialChunks", Value: 4})
	docs := make([]any, 40)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: fmt.Sprintf("t%d", i%7)}}
	}
	if _, err := clients[0].Database(dbn).Collection("users").InsertMany(ctx, docs); err != nil {
		t.Fatalf("insert on node-a: %v", err)
	}
	if n, err := clients[0].Database(dbn).Collection("users").CountDocuments(ctx, bson.D{}); err != nil || n != 40 {
		t.Fatalf("count on node-a = %d, %v; want 40", n, err)
	}
	waitClusterChunks(t, clients, 4, 3)

	// Created by an insert on node-c: on node-c's shard, listed everywhere.
	if _, err := clients[2].Database(dbn).Collection("events").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("insert on node-c: %v", err)
	}
	for i, c := range clients {
		waitFor(t, 15*time.Second, fmt.Sprintf("node %d lists both collections", i), func() bool {
			return slices.Equal(collectionNames(t, c.Database(dbn)), []string{"events", "users"})
		})
	}
	var got bson.M
	if err := clients[2].Database(dbn).Collection("events").FindOne(ctx, bson.D{}).Decode(&got); err != nil || got["_id"] != int32(1) {
		t.Fatalf("find on node-c = %v, %v", got, err)
	}

	// Another node's shard: read and written through its owner.
	if n, err := clients[1].Database(dbn).Collection("users").CountDocuments(ctx, bson.D{}); err != nil || n != 40 {
		t.Fatalf("count on node-b = %d, %v; want 40", n, err)
	}
	if _, err := clients[0].Database(dbn).Collection("events").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatalf("insert into node-c's events through node-a: %v", err)
	}
	if n, err := clients[2].Database(dbn).Collection("events").CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("count of events on node-c = %d, %v; want 2", n, err)
	}

	// A drop on one node reaches the others.
	if err := clients[1].Database(dbn).Collection("events").Drop(ctx); err != nil {
		t.Fatalf("drop on node-b: %v", err)
	}
	waitFor(t, 15*time.Second, "node-a no longer lists events", func() bool {
		return slices.Equal(collectionNames(t, clients[0].Database(dbn)), []string{"users"})
	})
}

// TestClusterNodeRestartKeepsItsShard: a node that stops and starts again under its name
// finds its shard again, with its data, and the cluster still shows three shards.
func TestClusterNodeRestartKeepsItsShard(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 2)
	ctx := context.Background()
	dbn := dbName(t)
	b := nodes[1]
	if _, err := b.client(t).Database(dbn).Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	b.kill() // SIGKILL: its lease expires after 2s
	b.restart()
	var got bson.M
	if err := b.client(t).Database(dbn).Collection("c").FindOne(ctx, bson.D{}).Decode(&got); err != nil || got["_id"] != "x" {
		t.Fatalf("after restart: %v, %v", got, err)
	}
	// node-a learns of the restarted node from etcd: b serves its own shard before node-a's
	// watch has seen b's registration again (the old one expires with b's lease).
	a := nodes[0].client(t)
	var res bson.M
	waitFor(t, 15*time.Second, "node-a lists both shards, each with its host, after the restart", func() bool {
		var err error
		if res, err = runCmd(t, a.Database("admin"), bson.D{{Key: "listShards", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		shards := res["shards"].(bson.A)
		for _, sh := range shards {
			for _, e := range sh.(bson.D) {
				if host, ok := e.Value.(string); e.Key == "host" && (!ok || strings.HasSuffix(host, "/")) {
					return false
				}
			}
		}
		return len(shards) == 2
	})
}
