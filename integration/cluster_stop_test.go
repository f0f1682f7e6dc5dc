package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

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

// TestClusterStopDuringMoveToStoppedNode: a partition moves from node-a's shard into node-b's
// while node-b is SIGSTOPped (it accepts connections, as the kernel does for it, and never
// answers), and node-a gets SIGTERM in the middle: node-a exits cleanly although its move,
// the moveChunk command that runs it and a find of both shards wait on node-b (server.stop fails the test, with
// the goroutines' stacks, when a node still runs 30 s after its SIGTERM: a hang check, not a
// timing bound). Started again, with node-b resumed, node-a serves every acknowledged
// document exactly once, from both shards. The lease TTL is long so that node-a still sees
// node-b up, and sends it the move.
func TestClusterStopDuringMoveToStoppedNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, nodes := startClusterNodes(t, 2, "--etcd-lease-ttl", "60s")
	clients := []*mongo.Client{nodes[0].client(t), nodes[1].client(t)}
	waitClusterShards(t, clients, 2)
	dbn := dbName(t)
	ns := dbn + ".c"
	shardColl(t, clients[0], ns, "tenant", bson.E{Key: "numInitialChunks", Value: 4})
	waitClusterChunks(t, clients, 4, 2)
	coll := clients[0].Database(dbn).Collection("c")
	var want []int32
	docs := make([]any, 500)
	for k := range docs {
		id := int32(k)
		docs[k] = bson.D{{Key: "_id", Value: id}, {Key: "tenant", Value: fmt.Sprintf("t%d", id)}}
		want = append(want, id)
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}

	if err := nodes[1].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodes[1].cmd.Process.Signal(syscall.SIGCONT) }) // before its stop
	var chunk bson.M
	for _, ch := range clusterChunks(t, clients[0], ns) {
		if ch["shard"] == "shard-0" {
			chunk = ch
		}
	}
	moved := make(chan error, 1)
	go func() {
		moved <- clients[0].Database("admin").RunCommand(ctx, bson.D{{Key: "moveChunk", Value: ns},
			{Key: "bounds", Value: bson.A{chunk["min"], chunk["max"]}}, {Key: "to", Value: "shard-1"}}).Err()
	}()
	// A read of both shards through node-a: it waits on node-b too, within its context.
	read := make(chan error, 1)
	go func() {
		cur, err := coll.Find(ctx, bson.D{})
		if err == nil {
			err = cur.All(ctx, &[]bson.Raw{})
		}
		read <- err
	}()
	waitFor(t, 15*time.Second, "node-a's moveChunk and find in progress", func() bool {
		select {
		case err := <-read:
			t.Fatalf("a read of a stopped node's shard answered: %v", err)
		default:
		}
		// The first batch may come from node-a's shard alone: the getMore then waits.
		return opInProgress(clients[0], "moveChunk") && opInProgress(clients[0], "find", "getMore")
	})
	select {
	case err := <-moved:
		t.Fatalf("moveChunk into a stopped node answered: %v", err)
	case err := <-read:
		t.Fatalf("a read of a stopped node's shard answered: %v", err)
	default:
	}
	nodes[0].stop()
	if t.Failed() {
		t.FailNow()
	}
	if err := <-moved; err == nil {
		t.Fatal("moveChunk succeeded although its node stopped while its destination did not answer")
	}
	if err := <-read; err == nil {
		t.Fatal("a read of a stopped node's shard succeeded")
	}
	if err := nodes[1].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	nodes[0].restart()
	clients[0] = nodes[0].client(t)
	checkExactlyOnce(t, clients, dbn, "c", want)
}

// opInProgress reports whether c's node lists a command named one of cmds in $currentOp.
func opInProgress(c *mongo.Client, cmds ...string) bool {
	cur, err := c.Database("admin").Aggregate(context.Background(), bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}}})
	if err != nil {
		return false
	}
	defer func() { _ = cur.Close(context.Background()) }()
	for cur.Next(context.Background()) {
		for _, cmd := range cmds {
			if _, err := cur.Current.LookupErr("command", cmd); err == nil {
				return true
			}
		}
	}
	return false
}
