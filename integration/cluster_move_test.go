package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cleavedb/cleave/cluster/etcdtest"
)

// clusterChunks returns, through c, the chunks of ns in config.chunks: {min, max, shard}.
func clusterChunks(t *testing.T, c *mongo.Client, ns string) []bson.M {
	t.Helper()
	ctx := context.Background()
	var coll bson.M
	if err := c.Database("config").Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: ns}}).Decode(&coll); err != nil {
		t.Fatalf("config.collections %s: %v", ns, err)
	}
	cur, err := c.Database("config").Collection("chunks").Find(ctx, bson.D{{Key: "uuid", Value: coll["uuid"]}},
		options.Find().SetSort(bson.D{{Key: "min", Value: 1}}))
	if err != nil {
		t.Fatalf("config.chunks: %v", err)
	}
	var out []bson.M
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// moveChunkTo moves, through c, the first chunk of ns on shard from whose min bound is not
// one of skip, to shard to; it returns the chunk's min bound.
func moveChunkTo(t *testing.T, c *mongo.Client, ns, key, from, to string, skip ...any) any {
	t.Helper()
	// The balancer moves and splits too: a chunk that changed between the read of
	// config.chunks and the move answers ConflictingOperationInProgress, as on MongoDB; the
	// chunks are read again.
	for attempt := 0; ; attempt++ {
		lo, err := moveChunkOnce(t, c, ns, key, from, to, skip...)
		var ce mongo.CommandError
		if err != nil && errors.As(err, &ce) && ce.Code == 117 && attempt < 10 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("moveChunk %v from %s to %s: %v", lo, from, to, err)
		}
		return lo
	}
}

// moveChunkOnce is one attempt of moveChunkTo.
func moveChunkOnce(t *testing.T, c *mongo.Client, ns, key, from, to string, skip ...any) (any, error) {
	t.Helper()
	for _, ch := range clusterChunks(t, c, ns) {
		lo := ch["min"].(bson.D)[0].Value
		if ch["shard"] != from || slices.Contains(skip, lo) {
			continue
		}
		return lo, c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "moveChunk", Value: ns},
			{Key: "bounds", Value: bson.A{bson.D{{Key: key, Value: lo}}, ch["max"]}}, {Key: "to", Value: to}}).Err()
	}
	t.Fatalf("no chunk of %s on %s", ns, from)
	return nil, nil
}

// retryableCode reports whether a workload may see err: a code the driver or the
// application retries (StaleConfig on a read routed with the old map, a node that is down).
func retryableCode(err error) bool {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Code == 13388 || ce.Code == 6 || ce.HasErrorLabel("RetryableWriteError")
	}
	return mongo.IsNetworkError(err)
}

// clusterWriter inserts {_id: n, tenant} through c until stop is closed and records every
// acknowledged _id; reads through c run alongside. Errors other than retryable ones fail.
type clusterWriter struct {
	mu    sync.Mutex
	acked []int32
	errs  []error
	wg    sync.WaitGroup
	stop  chan struct{}
}

// clusterWriters is how many goroutines of a clusterWriter insert at once.
const clusterWriters = 3

// startClusterWriter starts the writers and a reader through c on db.coll, from _id first on.
func startClusterWriter(c *mongo.Client, db, coll string, first int32) *clusterWriter {
	w := &clusterWriter{stop: make(chan struct{})}
	col := c.Database(db).Collection(coll)
	ctx := context.Background()
	w.wg.Add(clusterWriters + 1)
	for g := range int32(clusterWriters) {
		go func() {
			defer w.wg.Done()
			for id := first + g*1_000_000; ; id += 4 {
				select {
				case <-w.stop:
					return
				default:
				}
				docs := make([]any, 4)
				for k := range docs {
					docs[k] = bson.D{{Key: "_id", Value: id + int32(k)}, {Key: "tenant", Value: fmt.Sprintf("t%d", (id+int32(k))%37)}}
				}
				_, err := col.InsertMany(ctx, docs, options.InsertMany().SetOrdered(id%8 == 0))
				w.mu.Lock()
				if err != nil {
					w.errs = append(w.errs, fmt.Errorf("insert %d: %w", id, err))
				} else {
					for k := range docs {
						w.acked = append(w.acked, id+int32(k))
					}
				}
				w.mu.Unlock()
			}
		}()
	}
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			_, err := col.CountDocuments(ctx, bson.D{})
			if err != nil && !retryableCode(err) {
				w.mu.Lock()
				w.errs = append(w.errs, fmt.Errorf("count: %w", err))
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// finish stops the workload and returns the acknowledged _ids.
func (w *clusterWriter) finish(t *testing.T) []int32 {
	t.Helper()
	close(w.stop)
	w.wg.Wait()
	for _, err := range w.errs {
		t.Errorf("workload: %v", err)
	}
	return w.acked
}

// startMoveCluster starts three nodes and shards dbName(t).c on tenant in six chunks over
// their shards; it returns the etcd cluster, the nodes, a client of each, the database and
// the namespace. extra are more flags for every node.
func startMoveCluster(t *testing.T, extra ...string) (*etcdtest.Cluster, []*server, []*mongo.Client, string, string) {
	t.Helper()
	etcd, nodes := startClusterNodes(t, 3, extra...)
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	waitClusterShards(t, clients, 3)
	dbn := dbName(t)
	ns := dbn + ".c"
	shardColl(t, clients[0], ns, "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	waitClusterChunks(t, clients, 6, 3)
	return etcd, nodes, clients, dbn, ns
}

// waitAcked waits until the workload has acknowledged n documents.
func (w *clusterWriter) waitAcked(t *testing.T, n int) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("the workload wrote %d documents", n), func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.acked) >= n
	})
}

// readIDs returns how many times a find through c returns each _id of db.coll.
func readIDs(t *testing.T, c *mongo.Client, db, coll string) map[int32]int {
	t.Helper()
	cur, err := c.Database(db).Collection(coll).Find(context.Background(), bson.D{},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(500))
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	var all []bson.M
	if err := cur.All(context.Background(), &all); err != nil {
		t.Fatalf("find: %v", err)
	}
	got := map[int32]int{}
	for _, d := range all {
		got[d["_id"].(int32)]++
	}
	return got
}

// checkOnce fails unless got holds each _id once and every _id of acked, and a count of
// db.coll through c agrees with it.
func checkOnce(t *testing.T, what string, c *mongo.Client, db, coll string, got map[int32]int, acked map[int32]bool) {
	t.Helper()
	for id, n := range got {
		if n != 1 {
			t.Fatalf("%s: _id %d returned %d times", what, id, n)
		}
	}
	for id := range acked {
		if got[id] == 0 {
			t.Fatalf("%s: acknowledged _id %d is missing", what, id)
		}
	}
	if n, err := c.Database(db).Collection(coll).CountDocuments(context.Background(), bson.D{}); err != nil || n != int64(len(got)) {
		t.Fatalf("%s: count = %d, %v; find returns %d", what, n, err, len(got))
	}
}

// checkExactlyOnce checks, through every client, that db.coll holds exactly the _ids want.
func checkExactlyOnce(t *testing.T, clients []*mongo.Client, db, coll string, want []int32) {
	t.Helper()
	wantSet := map[int32]bool{}
	for _, id := range want {
		wantSet[id] = true
	}
	for i, c := range clients {
		got := readIDs(t, c, db, coll)
		checkOnce(t, fmt.Sprintf("node %d", i), c, db, coll, got, wantSet)
		if len(got) != len(wantSet) {
			t.Fatalf("node %d: %d documents, want %d", i, len(got), len(wantSet))
		}
	}
}

// TestClusterMoveChunkBetweenNodes: partitions move between shards of different nodes
// (moveChunk sent to a third node, which asks the source's node to run the move) while a
// workload inserts and counts through another node. Afterwards every node's config.chunks
// shows the new owners, and every node returns each acknowledged document exactly once.
func TestClusterMoveChunkBetweenNodes(t *testing.T) {
	t.Parallel()
	_, _, clients, dbn, ns := startMoveCluster(t)

	w := startClusterWriter(clients[1], dbn, "c", 0)
	w.waitAcked(t, 400)
	moved := moveChunkTo(t, clients[2], ns, "tenant", "shard-0", "shard-1")
	moveChunkTo(t, clients[2], ns, "tenant", "shard-1", "shard-2", moved)
	moveChunkTo(t, clients[0], ns, "tenant", "shard-2", "shard-0")
	for i := range 6 { // more moves, so that writes land in every step of some move
		counts := map[string]int{}
		for _, ch := range clusterChunks(t, clients[0], ns) {
			counts[ch["shard"].(string)]++
		}
		from := fmt.Sprintf("shard-%d", i%3)
		if counts[from] < 2 {
			continue
		}
		moveChunkTo(t, clients[i%3], ns, "tenant", from, fmt.Sprintf("shard-%d", (i+1)%3), moved)
	}
	acked := w.finish(t)
	if len(acked) < 400 {
		t.Fatalf("only %d documents acknowledged", len(acked))
	}
	// Every node's config.chunks shows the same owners: the moves above, and whatever the
	// balancer moved meanwhile (under load it may move the chunks the test moved, too).
	waitFor(t, 15*time.Second, "every node shows the same chunks", func() bool {
		want := chunkOwners(t, clients[0], ns)
		for _, c := range clients[1:] {
			if got := chunkOwners(t, c, ns); !slices.Equal(got, want) {
				return false
			}
		}
		return true
	})
	checkExactlyOnce(t, clients, dbn, "c", acked)
}

// chunkOwners lists, through c, the chunks of ns as "min→shard", in order.
func chunkOwners(t *testing.T, c *mongo.Client, ns string) []string {
	t.Helper()
	var out []string
	for _, ch := range clusterChunks(t, c, ns) {
		out = append(out, fmt.Sprintf("%v→%v", ch["min"], ch["shard"]))
	}
	return out
}

// addClusterNode starts one more node, named name, in the cluster etcd holds, with extra
// flags.
func addClusterNode(t *testing.T, etcd *etcdtest.Cluster, name string, extra ...string) *server {
	t.Helper()
	return startServer(t, append([]string{"--etcd", strings.Join(etcd.Endpoints(), ","), "--node-name", name,
		"--etcd-lease-ttl", "2s", "--replicas", "1"}, extra...)...)
}

// chunksOn counts, through c, the chunks of ns on shard s.
func chunksOn(t *testing.T, c *mongo.Client, ns, s string) int {
	t.Helper()
	n := 0
	for _, ch := range clusterChunks(t, c, ns) {
		if ch["shard"] == s {
			n++
		}
	}
	return n
}

// TestClusterAddNodeBalances: a fourth node joins a three-node cluster while a workload
// inserts and counts through another node; the elected partition manager moves partitions
// to its empty shard, and the workload sees no error but retryable ones. Afterwards every
// node (the new one too) returns each acknowledged document exactly once.
func TestClusterAddNodeBalances(t *testing.T) {
	t.Parallel()
	// The workload's few hundred kilobytes are far below MongoDB's migration threshold
	// (--balance-min-bytes), which any node may apply: whichever is elected decides.
	etcd, _, clients, dbn, ns := startMoveCluster(t, "--balance-min-bytes", "0")

	w := startClusterWriter(clients[1], dbn, "c", 0)
	w.waitAcked(t, 400)
	d := addClusterNode(t, etcd, "node-d", "--balance-min-bytes", "0")
	clients = append(clients, d.client(t))
	waitFor(t, 60*time.Second, "shard-3 on node-d receives a partition", func() bool {
		return chunksOn(t, clients[0], ns, "shard-3") > 0
	})
	acked := w.finish(t)
	for i, c := range clients {
		waitFor(t, 15*time.Second, fmt.Sprintf("node %d sees chunks on the four shards", i), func() bool {
			on := map[any]bool{}
			for _, ch := range clusterChunks(t, c, ns) {
				on[ch["shard"]] = true
			}
			return len(on) == 4
		})
	}
	checkExactlyOnce(t, clients, dbn, "c", acked)
}

// removeShardUntilDone runs removeShard name through c until it answers completed, checking
// the shapes of its replies on the way, and returns the replies' states in order (repeats
// folded).
func removeShardUntilDone(t *testing.T, c *mongo.Client, name string) []string {
	t.Helper()
	var states []string
	waitFor(t, 90*time.Second, "removeShard "+name+" completes", func() bool {
		res, err := runCmd(t, c.Database("admin"), bson.D{{Key: "removeShard", Value: name}})
		if err != nil {
			t.Fatalf("removeShard %s: %v", name, err)
		}
		st, _ := res["state"].(string)
		if len(states) == 0 || states[len(states)-1] != st {
			states = append(states, st)
		}
		switch st {
		case "started":
			if res["msg"] != "draining started successfully" || res["shard"] != name {
				t.Fatalf("started: %v", res)
			}
		case "ongoing":
			rem, ok := res["remaining"].(bson.D)
			if !ok || res["msg"] != "draining ongoing" || len(rem) != 3 || rem[0].Key != "chunks" {
				t.Fatalf("ongoing: %v", res)
			}
			if _, ok := rem[0].Value.(int64); !ok {
				t.Fatalf("remaining.chunks is not a long: %v", res)
			}
		case "completed":
			if res["msg"] != "removeshard completed successfully" || res["shard"] != name {
				t.Fatalf("completed: %v", res)
			}
			return true
		default:
			t.Fatalf("removeShard: %v", res)
		}
		time.Sleep(200 * time.Millisecond)
		return false
	})
	return states
}

// TestClusterRemoveShardDrains: removeShard, sent to one node, drains another node's shard
// while a workload runs: the elected manager moves its partitions — a sharded collection's
// and an unsharded collection's — to the other shards, the replies go started → ongoing →
// completed, listShards marks the shard draining, and every node then returns each
// acknowledged document exactly once with nothing left on the drained shard. Draining the
// last shard left is refused, as is an unknown shard.
func TestClusterRemoveShardDrains(t *testing.T) {
	t.Parallel()
	_, _, clients, dbn, ns := startMoveCluster(t)
	ctx := context.Background()
	// An unsharded collection created on node-c lives on its shard, shard-2.
	plain := make([]any, 50)
	for i := range plain {
		plain[i] = bson.D{{Key: "_id", Value: int32(i)}}
	}
	if _, err := clients[2].Database(dbn).Collection("plain").InsertMany(ctx, plain); err != nil {
		t.Fatal(err)
	}
	w := startClusterWriter(clients[1], dbn, "c", 0)
	w.waitAcked(t, 200)
	_, err := runCmd(t, clients[0].Database("admin"), bson.D{{Key: "removeShard", Value: "shard-9"}})
	wantCode(t, err, 70, "Shard shard-9 not found")
	states := removeShardUntilDone(t, clients[0], "shard-2")
	if states[0] != "started" || states[len(states)-1] != "completed" {
		t.Fatalf("removeShard went through %v", states)
	}
	acked := w.finish(t)
	for i, c := range clients {
		if n := chunksOn(t, c, ns, "shard-2"); n != 0 {
			t.Errorf("node %d: %d chunks still on shard-2", i, n)
		}
	}
	res, err := runCmd(t, clients[1].Database("admin"), bson.D{{Key: "listShards", Value: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range res["shards"].(bson.A) {
		d := sh.(bson.D)
		m := map[string]any{}
		for _, e := range d {
			m[e.Key] = e.Value
		}
		if (m["_id"] == "shard-2") != (m["draining"] == true) {
			t.Errorf("listShards: %v", d)
		}
	}
	checkExactlyOnce(t, clients, dbn, "c", acked)
	want := make([]int32, len(plain))
	for i := range want {
		want[i] = int32(i)
	}
	checkExactlyOnce(t, clients, dbn, "plain", want)
	// shard-1 drains too; shard-0 is then the last one.
	removeShardUntilDone(t, clients[2], "shard-1")
	_, err = runCmd(t, clients[2].Database("admin"), bson.D{{Key: "removeShard", Value: "shard-0"}})
	wantCode(t, err, 20, "it would remove the last shard")
	checkExactlyOnce(t, clients, dbn, "c", acked)
}

// chunkMap renders, through c, the chunks of ns as "min..max@shard" lines in order.
func chunkMap(t *testing.T, c *mongo.Client, ns string) string {
	t.Helper()
	var b strings.Builder
	for _, ch := range clusterChunks(t, c, ns) {
		fmt.Fprintf(&b, "%v..%v@%v\n", ch["min"], ch["max"], ch["shard"])
	}
	return b.String()
}

// TestClusterKillDuringMoveBetweenNodes: while a workload inserts through node-c and
// partitions move back and forth between node-a's and node-b's shards, node-a is killed with
// SIGKILL at a random moment (a move's source or destination, copying or committing), then
// restarted. Every node then shows one and the same partition map, and returns each
// acknowledged document exactly once, with the same count; twice on the same data.
func TestClusterKillDuringMoveBetweenNodes(t *testing.T) {
	t.Parallel()
	_, nodes, clients, dbn, ns := startMoveCluster(t)
	ctx := context.Background()
	acked := map[int32]bool{}
	pad := strings.Repeat("x", 400)
	for round := range 2 {
		c := clients[2]
		col := c.Database(dbn).Collection("c")
		var mu sync.Mutex
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(2)
		go func() { // inserts until an error (node-a down) or the kill
			defer wg.Done()
			for i := int32(0); ; i += 50 {
				select {
				case <-stop:
					return
				default:
				}
				docs := make([]any, 50)
				for k := range docs {
					id := int32(round)*10_000_000 + i + int32(k)
					docs[k] = bson.D{{Key: "_id", Value: id}, {Key: "tenant", Value: fmt.Sprintf("t%d", id%101)}, {Key: "pad", Value: pad}}
				}
				if _, err := col.InsertMany(ctx, docs); err != nil {
					return
				}
				mu.Lock()
				for _, d := range docs {
					acked[d.(bson.D)[0].Value.(int32)] = true
				}
				mu.Unlock()
			}
		}()
		go func() { // moves between node-a's and node-b's shards until an error
			defer wg.Done()
			for i := 0; ; i++ {
				from, to := "shard-0", "shard-1"
				if i%2 == 1 {
					from, to = to, from
				}
				var target bson.M
				for _, ch := range clusterChunks(t, c, ns) {
					if ch["shard"] == from {
						target = ch
					}
				}
				select {
				case <-stop:
					return
				default:
				}
				if target == nil {
					continue
				}
				err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "moveChunk", Value: ns},
					{Key: "bounds", Value: bson.A{bson.D{{Key: "tenant", Value: target["min"].(bson.D)[0].Value}}, target["max"]}},
					{Key: "to", Value: to}}).Err()
				var ce mongo.CommandError
				if err != nil && (!errors.As(err, &ce) || ce.Code != 117) {
					return
				}
			}
		}()
		waitFor(t, 30*time.Second, "the workload wrote 1000 more documents", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(acked) >= (round+1)*1000
		})
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond)
		nodes[0].kill()
		close(stop)
		wg.Wait()
		nodes[0].restart()
		clients[0] = nodes[0].client(t)

		// One map everywhere, and the same documents through every node.
		var want string
		waitFor(t, 30*time.Second, "every node shows the same chunks", func() bool {
			want = chunkMap(t, clients[0], ns)
			for _, c := range clients[1:] {
				if chunkMap(t, c, ns) != want {
					return false
				}
			}
			return true
		})
		var seen map[int32]int
		waitFor(t, 30*time.Second, "node-a reads every shard again", func() bool {
			n, err := clients[0].Database(dbn).Collection("c").CountDocuments(ctx, bson.D{})
			return err == nil && n >= int64(len(acked))
		})
		for i, c := range clients {
			got := readIDs(t, c, dbn, "c")
			checkOnce(t, fmt.Sprintf("round %d, node %d", round, i), c, dbn, "c", got, acked)
			if seen != nil && len(got) != len(seen) {
				t.Fatalf("round %d: node %d returns %d documents, node 0 %d", round, i, len(got), len(seen))
			}
			seen = got
		}
		for id := range seen {
			acked[id] = true // durable though unacknowledged: it must stay from now on
		}
		t.Logf("round %d: %d documents; chunks:\n%s", round, len(seen), want)
	}
}

// TestRemoveShardSingleNode: on one node with three shards, removeShard drains a shard into
// the other two (the draining mark is the node's own, in memory), and every document stays
// readable exactly once.
func TestRemoveShardSingleNode(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "3", "--partition-check-interval", "100ms")
	c := srv.client(t)
	dbn := dbName(t)
	ns := dbn + ".c"
	shardColl(t, c, ns, "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	want := make([]int32, 300)
	docs := make([]any, len(want))
	for i := range want {
		want[i] = int32(i)
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "tenant", Value: fmt.Sprintf("t%d", i%41)}}
	}
	if _, err := c.Database(dbn).Collection("c").InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	removeShardUntilDone(t, c, "shard-1")
	if n := chunksOn(t, c, ns, "shard-1"); n != 0 {
		t.Fatalf("%d chunks still on shard-1", n)
	}
	checkExactlyOnce(t, []*mongo.Client{c}, dbn, "c", want)
}
