package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cleavedb/cleave/cluster/etcdtest"
)

// TestClusterStopsWithoutEtcd: three nodes and one etcd, etcd stopped first, then SIGTERM
// to every node: each node exits, cleanly (server.stop fails the test, with the goroutines'
// stacks, when one is still running 30 s after its SIGTERM: a hang check, not a timing
// bound), although its campaign for partition manager, its lease and its watches can no
// longer reach etcd; started again with etcd back, every node serves its data.
func TestClusterStopsWithoutEtcd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	etcd := etcdtest.Start(t, 1)
	var nodes []*server
	for i := range 3 {
		nodes = append(nodes, startServer(t, "--etcd", strings.Join(etcd.Endpoints(), ","),
			"--node-name", fmt.Sprintf("node-%c", 'a'+i), "--etcd-lease-ttl", "2s", "--replicas", "1"))
	}
	dbn := dbName(t)
	// One collection created on each node (an insert creates it on that node's shard).
	for i, s := range nodes {
		coll := s.client(t).Database(dbn).Collection(fmt.Sprintf("n%d", i))
		docs := make([]any, 10)
		for k := range docs {
			docs[k] = bson.D{{Key: "_id", Value: k}}
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatalf("insert on node %d: %v", i, err)
		}
	}
	// One node is the partition manager; the other two campaign (their Campaign waits on
	// etcd for the leader's key to go).
	waitFor(t, 15*time.Second, "a partition manager", func() bool {
		for _, s := range nodes {
			if strings.Contains(s.log.String(), "this node is the partition manager") {
				return true
			}
		}
		return false
	})

	etcd.StopAll()
	var wg sync.WaitGroup
	for _, s := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); s.stop() }()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	etcd.Restart(0)
	for _, s := range nodes {
		s.restart()
	}
	for i, s := range nodes {
		c := s.client(t)
		for k := range nodes {
			var n int64
			waitFor(t, 15*time.Second, fmt.Sprintf("node %d counts the 10 documents of n%d", i, k), func() bool {
				var err error
				n, err = c.Database(dbn).Collection(fmt.Sprintf("n%d", k)).CountDocuments(ctx, bson.D{})
				return err == nil && n == 10
			})
		}
	}
}
