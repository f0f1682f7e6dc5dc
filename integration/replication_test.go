package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
)

// shardReplicas is what listShards shows of a replicated shard.
type shardReplicas struct {
	ID       string `bson:"_id"`
	Host     string `bson:"host"`
	Replicas []struct {
		ID    int64  `bson:"_id"`
		Node  string `bson:"node"`
		Host  string `bson:"host"`
		State string `bson:"stateStr"`
	} `bson:"replicas"`
}

// listReplicas returns listShards' shards as c's node sees them.
func listReplicas(t *testing.T, c *mongo.Client) []shardReplicas {
	t.Helper()
	var res struct {
		Shards []shardReplicas `bson:"shards"`
	}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "listShards", Value: 1}}).Decode(&res); err != nil {
		t.Fatalf("listShards: %v", err)
	}
	return res.Shards
}

// leaderOf returns the node serving shard s, "" when none does.
func (s shardReplicas) leaderOf() string {
	for _, r := range s.Replicas {
		if r.State == "PRIMARY" {
			return r.Node
		}
	}
	return ""
}

// waitReplicated waits until c's node lists shards shards, each with replicas copies: one
// leader and the others voters.
func waitReplicated(t *testing.T, c *mongo.Client, shards, replicas int, timeout time.Duration) []shardReplicas {
	t.Helper()
	var got []shardReplicas
	waitFor(t, timeout, fmt.Sprintf("%d shards of %d healthy replicas", shards, replicas), func() bool {
		got = listReplicas(t, c)
		if len(got) != shards {
			return false
		}
		for _, s := range got {
			primaries, secondaries := 0, 0
			for _, r := range s.Replicas {
				switch r.State {
				case "PRIMARY":
					primaries++
				case "SECONDARY":
					secondaries++
				}
			}
			if primaries != 1 || secondaries != replicas-1 {
				return false
			}
		}
		return true
	})
	return got
}

// majorityClient returns a client of s whose writes are retryable with w: "majority".
func majorityClient(t *testing.T, s *server) *mongo.Client {
	t.Helper()
	return s.client(t, options.Client().SetRetryWrites(true).SetWriteConcern(writeconcern.Majority()))
}

// TestReplicationFailover: three nodes with --replicas 3 make every shard a group of three
// copies, one per node, growing from the one its node created. A node leading a shard is
// SIGKILLed: the others elect a new leader and every write and read through them goes on
// (the client sees no error: routers wait for the new leader, the driver retries), with
// every acknowledged document present exactly once; the node restarts as a follower that
// catches up, and reads through it see everything.
func TestReplicationFailover(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 3, "--replicas", "3")
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = majorityClient(t, s)
	}
	shards := waitReplicated(t, clients[0], 3, 3, 30*time.Second)
	for _, s := range shards {
		t.Logf("%s: %s (leader %s)", s.ID, s.Host, s.leaderOf())
	}
	ns := dbName(t) + ".docs"
	shardColl(t, clients[0], ns, "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	waitClusterChunks(t, clients, 6, 3)
	coll := func(i int) *mongo.Collection { return clients[i].Database(dbName(t)).Collection("docs") }
	ctx := context.Background()
	insert := func(i, from, to int) time.Duration {
		t.Helper()
		start := time.Now()
		for k := from; k < to; k++ {
			if _, err := coll(i).InsertOne(ctx, bson.D{{Key: "_id", Value: k}, {Key: "tenant", Value: fmt.Sprintf("t%d", k)}}); err != nil {
				dumpLogs(t, nodes)
				t.Fatalf("insert %d through node %d: %v", k, i, err)
			}
		}
		return time.Since(start)
	}
	insert(0, 0, 300)

	victim := -1
	for i := range nodes {
		if shards[0].leaderOf() == fmt.Sprintf("node-%c", 'a'+i) {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("no leader for %s", shards[0].ID)
	}
	survivor := (victim + 1) % 3
	nodes[victim].kill()
	t.Logf("killed node %d, the leader of %s", victim, shards[0].ID)
	took := insert(survivor, 300, 400)
	t.Logf("100 inserts through node %d right after the kill took %v", survivor, took)
	n, err := coll(survivor).CountDocuments(ctx, bson.D{})
	if err != nil || n != 400 {
		t.Fatalf("count after failover = %d, %v; want 400", n, err)
	}
	after := listReplicas(t, clients[survivor])
	if l := after[0].leaderOf(); l == "" || l == fmt.Sprintf("node-%c", 'a'+victim) {
		t.Fatalf("%s's leader after the kill = %q", after[0].ID, l)
	}

	nodes[victim].restart()
	clients[victim] = majorityClient(t, nodes[victim])
	waitReplicated(t, clients[survivor], 3, 3, 30*time.Second)
	// The restarted node leads nothing at first; the others hand leaderships over until
	// each node leads one shard.
	waitFor(t, 30*time.Second, "one shard leader per node", func() bool {
		led := map[string]int{}
		for _, s := range listReplicas(t, clients[survivor]) {
			led[s.leaderOf()]++
		}
		return led["node-a"] == 1 && led["node-b"] == 1 && led["node-c"] == 1
	})
	insert(victim, 400, 450)
	for i := range nodes {
		n, err := coll(i).CountDocuments(ctx, bson.D{})
		if err != nil || n != 450 {
			t.Fatalf("count through node %d = %d, %v; want 450", i, n, err)
		}
	}
}

// shardOfLeader returns the index in nodes of the node leading listShards' shard s.
func shardLeaderIndex(t *testing.T, c *mongo.Client, s int) int {
	t.Helper()
	var idx int
	waitFor(t, 30*time.Second, fmt.Sprintf("a leader for shard %d", s), func() bool {
		l := listReplicas(t, c)[s].leaderOf()
		if l == "" {
			return false
		}
		idx = int(l[len(l)-1] - 'a')
		return true
	})
	return idx
}

// TestReplicationRetryAcrossFailover: a retryable insert and a retryable $inc answered by a
// shard's leader, then that leader's node SIGKILLed: sent again through another node with the
// same lsid and txnNumber (as a driver retries; sent raw, so that no driver session rewrites
// them), each returns its original result and changes nothing: the document is incremented
// once, not twice.
func TestReplicationRetryAcrossFailover(t *testing.T) {
	t.Parallel()
	_, nodes, _ := replicatedNodes(t, 3)
	c0 := nodes[0].client(t)
	dbn := dbName(t)
	// An unsharded collection lives on one shard: the one its creating node leads.
	if err := c0.Database(dbn).CreateCollection(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	wc := bsoncore.NewDocumentBuilder().AppendString("w", "majority").Build()
	retryable := func(b *bsoncore.DocumentBuilder, id string) bsoncore.Document {
		lsid := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, []byte(id)).Build()
		return b.AppendDocument("lsid", lsid).AppendInt64("txnNumber", 1).AppendDocument("writeConcern", wc).
			AppendString("$db", dbn).Build()
	}
	doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendInt32("n", 0).Build()
	insert := retryable(bsoncore.NewDocumentBuilder().AppendString("insert", "c").
		AppendArray("documents", bsoncore.NewArrayBuilder().AppendDocument(doc).Build()), "0123456789abcdef")
	stmt := bsoncore.NewDocumentBuilder().AppendDocument("q", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
		AppendDocument("u", bsoncore.NewDocumentBuilder().AppendDocument("$inc",
			bsoncore.NewDocumentBuilder().AppendInt32("n", 1).Build()).Build()).Build()
	inc := retryable(bsoncore.NewDocumentBuilder().AppendString("update", "c").
		AppendArray("updates", bsoncore.NewArrayBuilder().AppendDocument(stmt).Build()), "fedcba9876543210")
	run := func(s *server, cmd bsoncore.Document) bsoncore.Document {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl := wire.NewClient(s.addr, wire.ClientOptions{})
		defer cl.Close()
		reply, err := cl.Command(ctx, cmd)
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 || reply.Lookup("writeErrors").Type != 0 {
			t.Fatalf("%s: %s", cmd.Index(0).Key(), reply)
		}
		return reply
	}
	counts := func(reply bsoncore.Document) string {
		return fmt.Sprintf("n: %v, nModified: %v", reply.Lookup("n"), reply.Lookup("nModified"))
	}
	run(nodes[0], insert)
	first := counts(run(nodes[0], inc))
	var shard int
	for i, s := range listReplicas(t, c0) {
		if s.leaderOf() == "node-a" {
			shard = i
		}
	}
	victim := shardLeaderIndex(t, c0, shard)
	other := nodes[(victim+1)%3]
	if again := counts(run(other, inc)); again != first {
		t.Fatalf("$inc retried through another node before the kill answered %s, first %s", again, first)
	}
	nodes[victim].kill()
	if again := counts(run(other, inc)); again != first {
		t.Fatalf("$inc retried after the failover answered %s, first %s", again, first)
	}
	if res := run(other, insert); res.Lookup("n").Int32() != 1 {
		t.Fatalf("retried insert answered %s, want n: 1", res)
	}
	var got bson.M
	if err := other.client(t).Database(dbn).Collection("c").FindOne(context.Background(), bson.D{}).Decode(&got); err != nil || got["n"] != int32(1) {
		dumpLogs(t, nodes)
		t.Fatalf("document after the retries: %v, %v; want n: 1", got, err)
	}
}

// TestReplicationQuorumLost: with two of three nodes SIGKILLed, a write through the third is
// refused (not acknowledged) within its deadline; once the two are back, every acknowledged
// write is there and writes are accepted again.
func TestReplicationQuorumLost(t *testing.T) {
	t.Parallel()
	_, nodes, _ := replicatedNodes(t, 3)
	c0 := majorityClient(t, nodes[0])
	ns := dbName(t) + ".docs"
	shardColl(t, c0, ns, "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	coll := c0.Database(dbName(t)).Collection("docs")
	ctx := context.Background()
	for i := range 100 {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: fmt.Sprintf("t%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	nodes[1].kill()
	nodes[2].kill()
	tctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	refused := 0
	for i := 100; i < 110; i++ {
		if _, err := coll.InsertOne(tctx, bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: fmt.Sprintf("t%d", i)}}); err != nil {
			refused++
		}
	}
	cancel()
	if refused == 0 {
		t.Fatal("writes were acknowledged with two of three nodes down")
	}
	t.Logf("%d of 10 writes refused with two nodes down (the others reached a shard before its leader stepped down: none can be acknowledged without a quorum, see TestGroupPartitionedLeaderStepsDown)", refused)
	nodes[1].restart()
	nodes[2].restart()
	waitReplicated(t, c0, 3, 3, 60*time.Second)
	for i := range 100 {
		if n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: i}}); err != nil || n != 1 {
			dumpLogs(t, nodes)
			t.Fatalf("acknowledged _id %d: count %d, %v", i, n, err)
		}
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1000}, {Key: "tenant", Value: "x"}}); err != nil {
		t.Fatalf("insert after the nodes returned: %v", err)
	}
}

// TestReplicationWipedNode: a node whose data directory is lost comes back empty; its old
// replicas leave their groups, new ones are placed on it and receive snapshots (the raft logs
// were truncated since: --raft-log-keep 20), and the cluster is back to three copies of every
// shard, the same data in each.
func TestReplicationWipedNode(t *testing.T) {
	t.Parallel()
	_, nodes, _ := replicatedNodes(t, 3, "--raft-log-keep", "20")
	c0 := majorityClient(t, nodes[0])
	ns := dbName(t) + ".docs"
	shardColl(t, c0, ns, "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	coll := c0.Database(dbName(t)).Collection("docs")
	ctx := context.Background()
	for i := range 300 {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: fmt.Sprintf("t%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	nodes[2].kill()
	if err := os.RemoveAll(filepath.Join(nodes[2].dir, "data")); err != nil {
		t.Fatal(err)
	}
	nodes[2].restart()
	shards := waitReplicated(t, c0, 3, 3, 90*time.Second)
	for _, s := range shards {
		t.Logf("%s: %s", s.ID, s.Host)
	}
	checkReplicasAgree(t, nodes)
	if n, err := nodes[2].client(t).Database(dbName(t)).Collection("docs").CountDocuments(ctx, bson.D{}); err != nil || n != 300 {
		t.Fatalf("count through the wiped node = %d, %v; want 300", n, err)
	}
	if !strings.Contains(nodes[2].log.String(), "installed a snapshot") {
		t.Fatal("the wiped node's replicas caught up without a snapshot: the logs were not truncated")
	}
}

// dumpLogs logs every node's output when CLEAVE_DEBUG is set (before a failure).
func dumpLogs(t *testing.T, nodes []*server) {
	if os.Getenv("CLEAVE_DEBUG") == "" {
		return
	}
	for k, s := range nodes {
		t.Logf("node %d:\n%s", k, s.log.String())
	}
}

// TestReplicationWriteConcern: with three copies, w: 2 (a majority) and w: 3 are satisfied
// (w: 3 once every copy holds the write), w: 4 answers UnsatisfiableWriteConcern 100; with a
// node down, w: 3 with wtimeout answers WriteConcernTimeout 64 with errInfo.wtimeout, the
// write itself done.
func TestReplicationWriteConcern(t *testing.T) {
	t.Parallel()
	_, nodes, _ := replicatedNodes(t, 3)
	c := nodes[0].client(t)
	db := c.Database(dbName(t))
	insert := func(id int, wc bson.D) *mongo.WriteConcernError {
		t.Helper()
		cmd := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}}, {Key: "writeConcern", Value: wc}}
		err := db.RunCommand(context.Background(), cmd).Err()
		var we mongo.WriteException
		switch {
		case err == nil:
			return nil
		case errors.As(err, &we) && we.WriteConcernError != nil && len(we.WriteErrors) == 0:
			return we.WriteConcernError
		}
		t.Fatalf("insert with %v: %v", wc, err)
		return nil
	}
	for i, w := range []any{2, 3, "majority"} {
		if wce := insert(i, bson.D{{Key: "w", Value: w}}); wce != nil {
			t.Fatalf("w: %v answered %v", w, wce)
		}
	}
	// /metrics: each node leads one shard and holds three copies; a leader's followers lag
	// by nothing once w: 3 returned.
	leaders := 0
	for _, s := range nodes {
		fams := scrape(t, s)
		for _, m := range fams["cleave_replica_leader"].GetMetric() {
			leaders += int(m.GetGauge().GetValue())
		}
		if n := len(fams["cleave_replica_applied_index"].GetMetric()); n != 3 {
			t.Errorf("node %s reports %d copies' applied index, want 3", s.addr, n)
		}
		if _, ok := fams["cleave_replica_lag_entries"]; !ok {
			t.Errorf("node %s reports no cleave_replica_lag_entries", s.addr)
		}
	}
	if leaders != 3 {
		t.Errorf("cleave_replica_leader sums to %d over the nodes, want 3", leaders)
	}
	if wce := insert(10, bson.D{{Key: "w", Value: 4}}); wce == nil || wce.Code != 100 {
		t.Fatalf("w: 4 answered %v, want writeConcernError 100", wce)
	}
	nodes[2].kill()
	wce := insert(11, bson.D{{Key: "w", Value: 3}, {Key: "wtimeout", Value: 500}})
	if wce == nil || wce.Code != 64 || !strings.Contains(wce.Details.String(), `"wtimeout": true`) {
		t.Fatalf("w: 3 with a node down answered %v, want writeConcernError 64 with errInfo.wtimeout", wce)
	}
	if n, err := db.Collection("c").CountDocuments(context.Background(), bson.D{{Key: "_id", Value: 11}}); err != nil || n != 1 {
		t.Fatalf("the write that timed out waiting for copies: count %d, %v; want it done", n, err)
	}
	if wce := insert(12, bson.D{{Key: "w", Value: 2}}); wce != nil {
		t.Fatalf("w: 2 with one node down answered %v", wce)
	}
}

// TestReplicationChangeStreamFailover: a change stream on a collection spread over three
// replicated shards sees every insert exactly once, in the order of each shard, across the
// SIGKILL of a shard's leader (the node the stream reads through stays up; its reads of the
// dead leader's shard move to the new leader, whose copy of the change log is the same) and
// across a resume through another node.
func TestReplicationChangeStreamFailover(t *testing.T) {
	t.Parallel()
	_, nodes, _ := replicatedNodes(t, 3)
	c0 := majorityClient(t, nodes[0])
	ns := dbName(t) + ".docs"
	shardColl(t, c0, ns, "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	ctx := context.Background()
	stream, err := c0.Database(dbName(t)).Collection("docs").Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Close(ctx) }()
	victim := shardLeaderIndex(t, c0, 1)
	if victim == 0 {
		victim = shardLeaderIndex(t, c0, 2)
	}
	writer := majorityClient(t, nodes[3-victim]) // neither node 0 nor the victim
	coll := writer.Database(dbName(t)).Collection("docs")
	for i := range 200 {
		if i == 100 {
			nodes[victim].kill()
		}
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: fmt.Sprintf("t%d", i)}}); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	seen := map[int32]int{}
	var token bson.Raw
	deadline := time.Now().Add(60 * time.Second)
	for len(seen) < 150 && time.Now().Before(deadline) {
		if stream.Next(ctx) {
			seen[stream.Current.Lookup("documentKey", "_id").Int32()]++
			token = stream.ResumeToken()
		} else if err := stream.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
	}
	// Resume through the writer's node from the last token read: the rest, once each.
	other, err := writer.Database(dbName(t)).Collection("docs").Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(token))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Close(ctx) }()
	for len(seen) < 200 && time.Now().Before(deadline) {
		if other.Next(ctx) {
			seen[other.Current.Lookup("documentKey", "_id").Int32()]++
		} else if err := other.Err(); err != nil {
			t.Fatalf("resumed stream: %v", err)
		}
	}
	for i := range int32(200) {
		if seen[i] != 1 {
			t.Errorf("insert of _id %d seen %d times", i, seen[i])
		}
	}
}

// TestReplicationShardsPerNode: nodes of two shards each make six groups of three copies, whose
// leaders spread two per node; a collection over the six takes writes through every node, the
// copies agree, and with a node killed every shard keeps serving.
func TestReplicationShardsPerNode(t *testing.T) {
	t.Parallel()
	_, nodes, _ := replicatedNodesShards(t, 3, 2)
	c0 := majorityClient(t, nodes[0])
	ns := dbName(t) + ".docs"
	shardColl(t, c0, ns, "tenant", bson.E{Key: "numInitialChunks", Value: 12})
	waitFor(t, 30*time.Second, "two shard leaders per node", func() bool {
		led := map[string]int{}
		for _, s := range listReplicas(t, c0) {
			led[s.leaderOf()]++
		}
		return led["node-a"] == 2 && led["node-b"] == 2 && led["node-c"] == 2
	})
	ctx := context.Background()
	colls := make([]*mongo.Collection, len(nodes))
	for i, s := range nodes {
		colls[i] = majorityClient(t, s).Database(dbName(t)).Collection("docs")
	}
	start := time.Now()
	for i := range 300 {
		coll := colls[i%3]
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: fmt.Sprintf("t%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("300 inserts through the three nodes: %v", time.Since(start).Round(time.Millisecond))
	checkReplicasAgree(t, nodes, 6)
	nodes[1].kill()
	coll := c0.Database(dbName(t)).Collection("docs")
	for i := 300; i < 400; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: fmt.Sprintf("t%d", i)}}); err != nil {
			t.Fatalf("insert %d with node b down: %v", i, err)
		}
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 400 {
		t.Fatalf("count = %d, %v; want 400", n, err)
	}
}
