package integration

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// clusterReshardDocs is the size of the collection the cluster tests reshard: 10,000
// documents, 200,000 with CLEAVE_LONG=1 (make reshard).
func clusterReshardDocs() int {
	if os.Getenv("CLEAVE_LONG") == "1" {
		return 200_000
	}
	return 10_000
}

// clusterWritersRunning starts one writer (runWriter, writer number first+i) on each of
// colls, each a client of a different node, and returns their logs and a function that
// waits until each has written more, then stops them.
func clusterWritersRunning(t *testing.T, colls []*mongo.Collection, first, n int) ([]*ackLog, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := make([]*ackLog, len(colls))
	var wg sync.WaitGroup
	for i := range colls {
		logs[i] = &ackLog{}
		wg.Add(1)
		go func() { defer wg.Done(); runWriter(ctx, colls[i], first+i, n, logs[i]) }()
	}
	progressed := func(more int64) {
		marks := make([]int64, len(logs))
		for i, l := range logs {
			marks[i] = l.ops.Load() + more
		}
		waitFor(t, 2*time.Minute, "the writers to write", func() bool {
			for i, l := range logs {
				if l.ops.Load() < marks[i] {
					return false
				}
			}
			return true
		})
	}
	progressed(20)
	return logs, func() {
		progressed(20) // writes on the new layout too
		cancel()
		wg.Wait()
	}
}

// checkClusterLayout checks, through every node, that db holds coll and no temporary copy
// of a layout change (every node dropped it), and that config.collections shows key for
// db.coll (nil: not sharded).
func checkClusterLayout(t *testing.T, clients []*mongo.Client, db, coll string, key bson.M) {
	t.Helper()
	for i, c := range clients {
		waitFor(t, 15*time.Second, "every node to drop the temporary collection", func() bool {
			names, err := c.Database(db).ListCollectionNames(context.Background(), bson.D{})
			return err == nil && slices.Contains(names, coll) && !slices.ContainsFunc(names, func(n string) bool {
				return strings.HasPrefix(n, "system.resharding.")
			})
		})
		if got := collKey(t, c, db+"."+coll); len(got) != len(key) || len(key) > 0 && !equalM(got, key) {
			t.Fatalf("node %d: config.collections shows the key %v, want %v", i, got, key)
		}
	}
}

// logLayoutChanges logs the "changed a collection's layout" lines of node's log so far (what
// its layout changes gathered, copied and applied, and how long they held writes).
func logLayoutChanges(t *testing.T, node *server) {
	for _, line := range strings.Split(node.log.String(), "\n") {
		if strings.Contains(line, "changed a collection's layout") {
			t.Logf("server: %s", line)
		}
	}
}

// equalM reports whether two flat documents hold the same fields and values.
func equalM(a, b bson.M) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestClusterReshardCollection reshards a collection of three nodes from a bad key (4
// tenants) to a good one (a device per document) through one node while four clients, on
// the three nodes, insert, update and delete; then unshards it to a shard of another node
// under four more. Every acknowledged write is there once through every node, each node
// validates the collection, every node's config.collections shows the new key (then none),
// the new partitions spread over the three nodes' shards, a find by the new key reads one
// shard, and no temporary collection is left on any node.
func TestClusterReshardCollection(t *testing.T) {
	t.Parallel()
	n := clusterReshardDocs()
	nodes, clients, dbn := shardedOverThree(t, "events", "tenant", 6)
	ns := dbn + ".events"
	loadEvents(t, clients[0].Database(dbn).Collection("events"), n)
	colls := make([]*mongo.Collection, 4)
	for i := range colls {
		colls[i] = clients[i%3].Database(dbn).Collection("events")
	}
	logs, stop := clusterWritersRunning(t, colls, 0, n)
	before := opsNow(logs)
	start := time.Now()
	if _, err := runCmd(t, clients[1].Database("admin"), bson.D{{Key: "reshardCollection", Value: ns},
		{Key: "key", Value: bson.D{{Key: "deviceId", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 6}}); err != nil {
		t.Fatalf("reshardCollection: %v", err)
	}
	t.Logf("reshardCollection of %d documents over three nodes under 4 writers took %v", n, time.Since(start))
	writtenDuring(t, logs, before, "the reshardCollection")
	stop()
	for _, c := range clients {
		checkAcked(t, c.Database(dbn).Collection("events"), n, logs)
	}
	checkClusterLayout(t, clients, dbn, "events", bson.M{"deviceId": "hashed"})
	waitClusterChunks(t, clients, 6, 3)
	for i, c := range clients {
		stage, shards := explainShards(t, c, dbn, bson.D{{Key: "find", Value: "events"}, {Key: "filter", Value: bson.D{{Key: "deviceId", Value: "d77"}}}})
		if stage != "SINGLE_SHARD" || len(shards) != 1 || shards[0].Returned != 1 {
			t.Fatalf("node %d: find by the new key: %s over %+v", i, stage, shards)
		}
	}

	more, stop := clusterWritersRunning(t, colls, 4, n) // writers 4-7 touch other documents
	before = opsNow(more)
	if _, err := runCmd(t, clients[2].Database("admin"), bson.D{{Key: "unshardCollection", Value: ns}, {Key: "toShard", Value: "shard-0"}}); err != nil {
		t.Fatalf("unshardCollection: %v", err)
	}
	writtenDuring(t, more, before, "the unshardCollection")
	stop()
	logs = append(logs, more...)
	for _, c := range clients {
		checkAcked(t, c.Database(dbn).Collection("events"), n, logs)
	}
	checkClusterLayout(t, clients, dbn, "events", nil)
	for i, c := range clients {
		if got := collShards(t, c, dbn, "events"); !slices.Equal(got, []string{"shard-0"}) {
			t.Fatalf("node %d: after unshardCollection to shard-0 the collection is on %v", i, got)
		}
	}
	logLayoutChanges(t, nodes[1]) // the reshard's coordinator (the log is flushed now and then)
	logLayoutChanges(t, nodes[2]) // the unshard's
}

// TestClusterReshardAbortFromAnotherNode: a reshardCollection sent to one node, held in its
// copy by MongoDB's failpoint, is aborted by abortReshardCollection sent to another node (which
// finds the coordinator in the catalog): the first answers ReshardCollectionAborted, the
// collection keeps its key and documents, and no node keeps the temporary copy; a
// commitReshardCollection through a third node then ends the next one early.
func TestClusterReshardAbortFromAnotherNode(t *testing.T) {
	t.Parallel()
	const n = 4000
	_, clients, dbn := shardedOverThree(t, "events", "tenant", 3, "--test-commands")
	ns := dbn + ".events"
	loadEvents(t, clients[0].Database(dbn).Collection("events"), n)
	pause := func(mode string) {
		if _, err := runCmd(t, clients[0].Database("admin"), bson.D{{Key: "configureFailPoint", Value: "reshardingPauseRecipientDuringCloning"}, {Key: "mode", Value: mode}}); err != nil {
			t.Fatal(err)
		}
	}
	reshard := func() chan error {
		done := make(chan error, 1)
		go func() {
			_, err := runCmd(t, clients[0].Database("admin"), bson.D{{Key: "reshardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "deviceId", Value: "hashed"}}}})
			done <- err
		}()
		return done
	}
	paused := func() bool {
		op := reshardOp(t, clients[0], ns)
		return op != nil && asInt64(op["documentsCopied"]) > 0
	}
	pause("alwaysOn")
	done := reshard()
	waitFor(t, time.Minute, "the copy to pause", paused)
	wantCmdError(t, clients[2], bson.D{{Key: "reshardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "n", Value: "hashed"}}}}, 338, "ReshardCollectionInProgress")
	names, err := clients[2].Database(dbn).ListCollectionNames(context.Background(), bson.D{})
	if err != nil || !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "system.resharding.") }) {
		t.Fatalf("another node does not list the temporary copy during the copy: %v %v", names, err)
	}
	if _, err := runCmd(t, clients[1].Database("admin"), bson.D{{Key: "abortReshardCollection", Value: ns}}); err != nil {
		t.Fatalf("abortReshardCollection through another node: %v", err)
	}
	pause("off")
	var ce mongo.CommandError
	if err := <-done; !errors.As(err, &ce) || ce.Code != 341 || ce.Name != "ReshardCollectionAborted" {
		t.Fatalf("aborted reshardCollection: %v", err)
	}
	checkClusterLayout(t, clients, dbn, "events", bson.M{"tenant": "hashed"})
	for _, c := range clients {
		checkAcked(t, c.Database(dbn).Collection("events"), n, nil)
	}
	wantCmdError(t, clients[2], bson.D{{Key: "abortReshardCollection", Value: ns}}, 339, "NoSuchReshardCollection")

	pause("alwaysOn")
	done = reshard()
	waitFor(t, time.Minute, "the copy to pause", paused)
	if _, err := runCmd(t, clients[2].Database("admin"), bson.D{{Key: "commitReshardCollection", Value: ns}}); err != nil {
		t.Fatalf("commitReshardCollection through another node: %v", err)
	}
	pause("off")
	if err := <-done; err != nil {
		t.Fatalf("committed reshardCollection: %v", err)
	}
	checkClusterLayout(t, clients, dbn, "events", bson.M{"deviceId": "hashed"})
	for _, c := range clients {
		checkAcked(t, c.Database(dbn).Collection("events"), n, nil)
	}
}

// TestClusterReshardCoordinatorKilled: the node coordinating a reshardCollection is killed
// (SIGKILL) while its copy is held by the failpoint (the gather brought the source onto its
// shard): the elected manager of the survivors drops the temporary copy once the node's lease
// is gone, so no half-done change stays in etcd, and the collection keeps its key; once the
// node is back, every document is there once through every node.
func TestClusterReshardCoordinatorKilled(t *testing.T) {
	t.Parallel()
	const n = 3000
	_, nodes := startClusterNodes(t, 3, "--test-commands")
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	waitClusterShards(t, clients, 3)
	dbn := dbName(t)
	ns := dbn + ".events"
	loadEvents(t, clients[1].Database(dbn).Collection("events"), n) // on node-b's shard
	shardColl(t, clients[1], ns, "tenant")
	if _, err := runCmd(t, clients[2].Database("admin"), bson.D{{Key: "configureFailPoint", Value: "reshardingPauseRecipientDuringCloning"}, {Key: "mode", Value: "alwaysOn"}}); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1) // the command ends only with the node's death, or early with an error
	go func() {
		ended <- clients[2].Database("admin").RunCommand(context.Background(), bson.D{{Key: "reshardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "deviceId", Value: "hashed"}}}}).Err()
	}()
	waitFor(t, time.Minute, "the copy to pause", func() bool {
		select {
		case err := <-ended:
			t.Fatalf("reshardCollection ended before its copy paused: %v", err)
		default:
		}
		op := reshardOp(t, clients[2], ns)
		return op != nil && asInt64(op["documentsCopied"]) > 0
	})
	nodes[2].kill()
	checkClusterLayout(t, clients[:2], dbn, "events", bson.M{"tenant": "hashed"})
	waitFor(t, time.Minute, "a survivor to drop the copy of the dead node's layout change", func() bool {
		return strings.Contains(nodes[0].log.String()+nodes[1].log.String(), "aborted a layout change whose node left the cluster")
	})
	nodes[2].restart()
	clients[2] = nodes[2].client(t)
	checkClusterLayout(t, clients, dbn, "events", bson.M{"tenant": "hashed"})
	for _, c := range clients {
		waitFor(t, 30*time.Second, "the restarted node to serve the collection", func() bool {
			n, err := c.Database(dbn).Collection("events").CountDocuments(context.Background(), bson.D{})
			return err == nil && n > 0
		})
		checkAcked(t, c.Database(dbn).Collection("events"), n, nil)
	}
}

// TestClusterReshardReplicated: reshardCollection, then unshardCollection, over three nodes
// whose shards are each kept by three replicas (the default of cluster mode), with a writer
// on each node: every acknowledged write is there once through every node afterwards.
func TestClusterReshardReplicated(t *testing.T) {
	t.Parallel()
	const n = 3000
	_, nodes, _ := replicatedNodes(t, 3)
	clients := make([]*mongo.Client, len(nodes))
	colls := make([]*mongo.Collection, len(nodes))
	dbn := dbName(t)
	for i, s := range nodes {
		clients[i] = s.client(t)
		colls[i] = clients[i].Database(dbn).Collection("events")
	}
	ns := dbn + ".events"
	shardColl(t, clients[0], ns, "tenant", bson.E{Key: "numInitialChunks", Value: 3})
	loadEvents(t, colls[0], n)
	logs, stop := clusterWritersRunning(t, colls, 0, n)
	before := opsNow(logs)
	if _, err := runCmd(t, clients[1].Database("admin"), bson.D{{Key: "reshardCollection", Value: ns},
		{Key: "key", Value: bson.D{{Key: "deviceId", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 3}}); err != nil {
		t.Fatalf("reshardCollection: %v", err)
	}
	if _, err := runCmd(t, clients[2].Database("admin"), bson.D{{Key: "unshardCollection", Value: ns}}); err != nil {
		t.Fatalf("unshardCollection: %v", err)
	}
	writtenDuring(t, logs, before, "the reshardCollection and the unshardCollection")
	stop()
	checkClusterLayout(t, clients, dbn, "events", nil)
	for _, c := range clients {
		checkAcked(t, c.Database(dbn).Collection("events"), n, logs)
	}
}

// TestClusterReshardRecipientKilled: a node receiving part of a reshardCollection's copy is
// killed (SIGKILL) mid-copy: the copy's next batch for it fails, the change is aborted (the
// command answers the error), every other node drops the temporary copy, and once the node is
// back (it rejoins though the cluster dropped the copy it held) the collection has its old key
// and every document through every node.
func TestClusterReshardRecipientKilled(t *testing.T) {
	t.Parallel()
	const n = 4000
	nodes, clients, dbn := shardedOverThree(t, "events", "tenant", 3, "--test-commands")
	ns := dbn + ".events"
	loadEvents(t, clients[0].Database(dbn).Collection("events"), n)
	failpoint := func(mode string) {
		if _, err := runCmd(t, clients[1].Database("admin"), bson.D{{Key: "configureFailPoint", Value: "reshardingPauseRecipientDuringCloning"}, {Key: "mode", Value: mode}}); err != nil {
			t.Fatal(err)
		}
	}
	failpoint("alwaysOn")
	done := make(chan error, 1)
	go func() {
		_, err := clients[1].Database("admin").RunCommand(context.Background(), bson.D{{Key: "reshardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "deviceId", Value: "hashed"}}}}).Raw()
		done <- err
	}()
	waitFor(t, time.Minute, "the copy to pause", func() bool {
		op := reshardOp(t, clients[1], ns)
		return op != nil && asInt64(op["documentsCopied"]) > 0
	})
	nodes[0].kill()
	failpoint("off")
	err := <-done
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("reshardCollection with a node holding part of its copy dead: %v, want a command error", err)
	}
	t.Logf("reshardCollection with a recipient dead: %v", err)
	checkClusterLayout(t, clients[1:], dbn, "events", bson.M{"tenant": "hashed"})
	nodes[0].restart()
	clients[0] = nodes[0].client(t)
	checkClusterLayout(t, clients, dbn, "events", bson.M{"tenant": "hashed"})
	for _, c := range clients {
		checkAcked(t, c.Database(dbn).Collection("events"), n, nil)
	}
}
