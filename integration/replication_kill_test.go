package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/cleavedb/cleave/cluster/etcdtest"
)

// replicatedNodes starts an embedded etcd (clusterEtcd) and n nodes with --replicas 3 (and
// extra flags), each listening on a port fixed for the test, so that a client's seed list of
// every node stays right across restarts. It waits until every shard has three healthy
// replicas.
func replicatedNodes(t *testing.T, n int, extra ...string) (*etcdtest.Cluster, []*server, string) {
	return replicatedNodesShards(t, n, 1, extra...)
}

// replicatedNodesShards is replicatedNodes with shards shards per node (--shards).
func replicatedNodesShards(t *testing.T, n, shards int, extra ...string) (*etcdtest.Cluster, []*server, string) {
	t.Helper()
	etcd := clusterEtcd(t)
	var nodes []*server
	var addrs []string
	for i := range n {
		port := freePort(t)
		addrs = append(addrs, port)
		nodes = append(nodes, startServer(t, append([]string{"--etcd", strings.Join(etcd.Endpoints(), ","),
			"--node-name", fmt.Sprintf("node-%c", 'a'+i), "--etcd-lease-ttl", "2s", "--listen", port,
			"--replicas", "3", "--shards", strconv.Itoa(shards)}, extra...)...))
	}
	c := nodes[0].client(t)
	waitReplicated(t, c, n*shards, 3, 60*time.Second)
	return etcd, nodes, "mongodb://" + strings.Join(addrs, ",") + "/"
}

// freePort returns a loopback address for a node that may be killed and restarted on it
// (etcdtest.FreeAddr: below the kernel's ephemeral range when it can).
func freePort(t *testing.T) string { return etcdtest.FreeAddr(t) }

// killLog is what the writers of TestReplicationKillChaos saw.
type killLog struct {
	mu        sync.Mutex
	acked     map[int64]bool // acknowledged inserts
	unknown   map[int64]bool // inserts that failed: they may or may not be there
	lastOK    time.Time
	okSince   map[int]time.Time // per writer, its last acknowledged insert
	failures  int
	lastError string
}

func (l *killLog) note(w int, id int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.unknown[id] = true
		l.failures++
		if !errors.Is(err, context.Canceled) {
			l.lastError = err.Error()
		}
		return
	}
	l.acked[id] = true
	l.lastOK = time.Now()
	l.okSince[w] = l.lastOK
}

// resumed waits until every writer had an insert acknowledged after t0, and returns how long
// after t0 the last of them did (or false after timeout).
func (l *killLog) resumed(t0 time.Time, writers int, timeout time.Duration) (time.Duration, bool) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		l.mu.Lock()
		var last time.Time
		all := len(l.okSince) == writers
		for _, ts := range l.okSince {
			if ts.Before(t0) {
				all = false
			}
			if ts.After(last) {
				last = ts
			}
		}
		l.mu.Unlock()
		if all {
			return last.Sub(t0), true
		}
	}
	return 0, false
}

// TestReplicationKillChaos: 8 clients insert (retryable, w: "majority", unique _ids) through
// every node of a 3-node cluster with --replicas 3 while a random node, shard leaders
// included, is SIGKILLed and restarted 5 s later, round after round. Afterwards every
// acknowledged document is there exactly once, the replicas of each shard hold the same data,
// and validate is clean; the test log shows how long writes took to flow again after each
// kill. Each kill comes once every writer had an insert acknowledged since the last restart,
// at least 4 s after it; CLEAVE_LONG=1 runs 20 rounds, each kill 5 s later than that (make
// replication-chaos); CI runs 3.
func TestReplicationKillChaos(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kill rounds are slow")
	}
	rounds, pause, catchUp := 3, time.Duration(0), 4*time.Second
	if os.Getenv("CLEAVE_LONG") != "" {
		rounds, pause = 20, 5*time.Second
	}
	_, nodes, seeds := replicatedNodes(t, 3)
	admin := nodes[0].client(t)
	ns := dbName(t) + ".docs"
	shardColl(t, admin, ns, "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	const writers = 8
	log := &killLog{acked: map[int64]bool{}, unknown: map[int64]bool{}, okSince: map[int]time.Time{}}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range writers {
		cl, err := mongo.Connect(options.Client().ApplyURI(seeds).SetRetryWrites(true).
			SetWriteConcern(writeconcern.Majority()).SetTimeout(20 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Disconnect(context.Background()) })
		coll := cl.Database(dbName(t)).Collection("docs")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := int64(0); ctx.Err() == nil; seq++ {
				id := int64(w)<<32 | seq
				_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "tenant", Value: fmt.Sprintf("t%d", rand.IntN(1000))}})
				if ctx.Err() != nil { // stopped in flight: it may or may not be there
					log.note(w, id, ctx.Err())
					return
				}
				log.note(w, id, err)
			}
		}()
	}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var resume []time.Duration
	restarted := time.Now().Add(-catchUp) // nothing to catch up before the first kill
	for round := range rounds {
		if _, ok := log.resumed(restarted, writers, 30*time.Second); !ok {
			t.Fatalf("round %d: writes did not all flow within 30s of the last restart (last error: %s)", round, log.lastError)
		}
		// NB: a restarted node catches up meanwhile: killing another before it has could
		// leave a shard without a quorum until the victim is back.
		time.Sleep(max(catchUp-time.Since(restarted), 0) + pause)
		victim := rnd.IntN(len(nodes))
		kill := time.Now()
		nodes[victim].kill()
		took, ok := log.resumed(kill, writers, 30*time.Second)
		if !ok {
			t.Fatalf("round %d: writes did not resume within 30s of killing node %d (last error: %s)", round, victim, log.lastError)
		}
		resume = append(resume, took)
		time.Sleep(max(5*time.Second-time.Since(kill), 0))
		nodes[victim].restart()
		restarted = time.Now()
		t.Logf("round %d: killed node %d; every writer acknowledged again after %v", round, victim, took.Round(time.Millisecond))
	}
	if _, ok := log.resumed(restarted, writers, 30*time.Second); !ok {
		t.Fatalf("writes did not all flow within 30s of the last restart (last error: %s)", log.lastError)
	}
	time.Sleep(pause)
	stop()
	wg.Wait()
	log.failures -= writers // the writers stopped in flight
	slices.Sort(resume)
	t.Logf("%d rounds: %d inserts acknowledged, %d failed (may or may not be there; the last: %s); writes resumed after a kill in %v (median), %v (max)",
		rounds, len(log.acked), log.failures, log.lastError, resume[len(resume)/2].Round(time.Millisecond), resume[len(resume)-1].Round(time.Millisecond))
	c := nodes[0].client(t)
	waitReplicated(t, c, 3, 3, 60*time.Second)
	checkAckedOnce(t, c.Database(dbName(t)).Collection("docs"), log)
	checkReplicasAgree(t, nodes)
	validateClean(t, c.Database(dbName(t)), "docs", "after the kills")
}

// checkAckedOnce checks that every acknowledged _id is in coll once and that every other
// document is one whose insert failed.
func checkAckedOnce(t *testing.T, coll *mongo.Collection, log *killLog) {
	t.Helper()
	cur, err := coll.Find(context.Background(), bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for cur.Next(context.Background()) {
		seen[cur.Current.Lookup("_id").Int64()]++
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("_id %d found %d times", id, n)
		}
		if !log.acked[id] && !log.unknown[id] {
			t.Errorf("_id %d is there but was never written", id)
		}
	}
	for id := range log.acked {
		if seen[id] == 0 {
			t.Errorf("acknowledged _id %d is missing", id)
		}
	}
}

// replicaSum is one node's _cleaveReplicaChecksum answer for a shard.
type replicaSum struct {
	Applied int64 `bson:"applied"`
	Sum     int64 `bson:"sum"`
	Keys    int64 `bson:"keys"`
}

// checkReplicasAgree waits until the three replicas of every shard applied the same entries
// and checks that they then hold the same data (the same digest); the nodes have one shard
// each, or shards in all.
func checkReplicasAgree(t *testing.T, nodes []*server, shards ...int) {
	t.Helper()
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	n := len(nodes)
	if len(shards) > 0 {
		n = shards[0]
	}
	for shard := range n {
		var sums []replicaSum
		waitFor(t, 30*time.Second, fmt.Sprintf("shard %d's replicas at one applied index", shard), func() bool {
			sums = sums[:0]
			for _, c := range clients {
				var s replicaSum
				if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "_cleaveReplicaChecksum", Value: shard}}).Decode(&s); err != nil {
					return false // a copy still being rebuilt (a wiped node's)
				}
				sums = append(sums, s)
			}
			return sums[0].Applied == sums[1].Applied && sums[1].Applied == sums[2].Applied
		})
		if sums[0] != sums[1] || sums[1] != sums[2] {
			t.Fatalf("shard %d's replicas differ at applied index %d: %+v", shard, sums[0].Applied, sums)
		}
		t.Logf("shard %d: 3 replicas agree at applied index %d (%d keys)", shard, sums[0].Applied, sums[0].Keys)
		// The server's own check: a checksum entry through the shard's log, digested by
		// every copy as of that entry.
		// Leadership may move meanwhile (leader balancing after a restart): the check then
		// runs again on the new leader.
		var err error
		for try := 0; try < 20; try++ {
			leader := leaderNow(context.Background(), clients, shard)
			if leader < 0 {
				t.Fatalf("no leader for shard %d", shard)
			}
			err = clients[leader].Database("admin").RunCommand(context.Background(), bson.D{{Key: "_cleaveCheckReplicas", Value: shard}}).Err()
			var ce mongo.CommandError
			if err == nil || !errors.As(err, &ce) || ce.Code != 10107 { // NotWritablePrimary: no longer the leader
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("_cleaveCheckReplicas %d: %v", shard, err)
		}
	}
}

// TestReplicationMoveDuringLeaderKill: partitions move back and forth between two replicated
// shards while documents are inserted, and the node leading the moves' source is SIGKILLed in
// the middle, twice: afterwards every acknowledged document is there exactly once, through
// every node, each shard's replicas hold the same data and validate is clean.
func TestReplicationMoveDuringLeaderKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kill rounds are slow")
	}
	_, nodes, seeds := replicatedNodes(t, 3)
	admin := nodes[0].client(t)
	ns := dbName(t) + ".docs"
	shardColl(t, admin, ns, "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	writer, err := mongo.Connect(options.Client().ApplyURI(seeds).SetRetryWrites(true).
		SetWriteConcern(writeconcern.Majority()).SetTimeout(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = writer.Disconnect(context.Background()) })
	log := &killLog{acked: map[int64]bool{}, unknown: map[int64]bool{}, okSince: map[int]time.Time{}}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // inserts
		defer wg.Done()
		coll := writer.Database(dbName(t)).Collection("docs")
		pad := strings.Repeat("x", 300)
		for id := int64(0); ctx.Err() == nil; id++ {
			_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "tenant", Value: fmt.Sprintf("t%d", id%97)}, {Key: "pad", Value: pad}})
			log.note(0, id, err)
		}
	}()
	var moves atomic.Int64
	go func() { // moves between shard-0 and shard-1, through the writer's nodes
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			from, to := "shard-0", "shard-1"
			if i%2 == 1 {
				from, to = to, from
			}
			var target bson.M
			if chunks, err := writer.Database("config").Collection("chunks").Find(ctx, bson.D{{Key: "ns", Value: ns}, {Key: "shard", Value: from}}); err == nil {
				var all []bson.M
				if chunks.All(ctx, &all) == nil && len(all) > 0 {
					target = all[0]
				}
			}
			if target == nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			err := writer.Database("admin").RunCommand(ctx, bson.D{{Key: "moveChunk", Value: ns},
				{Key: "bounds", Value: bson.A{target["min"], target["max"]}}, {Key: "to", Value: to}}).Err()
			if err == nil {
				moves.Add(1)
			}
		}
	}()
	// Each kill lands among inserts and moves: flowing waits for an insert acknowledged since
	// since, then for two more moves or 3 s (the fixed pause this used to be: moves may stall
	// meanwhile, behind the DDL lock of an abandoned incoming range). The victim stays down
	// until inserts flow without it and its lease (2 s) expired.
	flowing := func(since time.Time, what string) {
		t.Helper()
		from := moves.Load()
		if _, ok := log.resumed(since, 1, 30*time.Second); !ok {
			t.Fatalf("inserts did not resume %s (last error: %s)", what, log.lastError)
		}
		for deadline := time.Now().Add(3 * time.Second); moves.Load() < from+2 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	start := time.Now()
	for round := range 2 {
		flowing(start, "before the kill")
		victim := shardLeaderIndex(t, admin, 0)
		if victim == 0 {
			admin = nodes[1].client(t)
		}
		kill := time.Now()
		nodes[victim].kill()
		t.Logf("round %d: killed node %d, shard-0's leader", round, victim)
		if _, ok := log.resumed(kill, 1, 30*time.Second); !ok {
			t.Fatalf("round %d: inserts did not resume after the kill (last error: %s)", round, log.lastError)
		}
		time.Sleep(max(3*time.Second-time.Since(kill), 0)) // past the victim's lease
		nodes[victim].restart()
		start = time.Now()
	}
	flowing(start, "after the last restart")
	stop()
	wg.Wait()
	log.failures--
	t.Logf("%d moves done, %d inserts acknowledged, %d failed (the last: %s)", moves.Load(), len(log.acked), log.failures, log.lastError)
	c := nodes[0].client(t)
	waitReplicated(t, c, 3, 3, 60*time.Second)
	for i := range nodes {
		checkAckedOnce(t, nodes[i].client(t).Database(dbName(t)).Collection("docs"), log)
	}
	checkReplicasAgree(t, nodes)
	validateClean(t, c.Database(dbName(t)), "docs", "after the moves")
}

// TestReplicationBankTransfers: transactions move money between ten accounts of one shard
// while that shard's leader is SIGKILLed twice; each transaction runs on the node leading the
// shard (transactions stay within one node's shards). No transfer is half applied: every
// snapshot read during the run, and the final state, sums to the starting total, and no
// account goes negative.
func TestReplicationBankTransfers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kill rounds are slow")
	}
	_, nodes, _ := replicatedNodes(t, 3)
	dbn := dbName(t)
	ctx := context.Background()
	const accounts, start = 10, 1000
	var docs []any
	for i := range accounts {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "balance", Value: start}})
	}
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t) // a client of a killed node reconnects once it is back
	}
	if _, err := clients[0].Database(dbn).Collection("accounts").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	shard := -1
	for i, s := range listReplicas(t, clients[0]) {
		if s.leaderOf() == "node-a" {
			shard = i
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	var committed, failed, reads atomicCounter
	var violation atomic.Pointer[string]
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for runCtx.Err() == nil {
				i := leaderNow(runCtx, clients, shard)
				if i < 0 {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				err := transfer(runCtx, clients[i], dbn, rnd.IntN(accounts), rnd.IntN(accounts), w == 0, &reads, &violation)
				if err != nil {
					failed.add(1)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				committed.add(1)
			}
		}()
	}
	// committing waits up to d for n more transfers to commit (fixed pauses of d, these were).
	committing := func(n int64, d time.Duration) {
		from := committed.get()
		for deadline := time.Now().Add(d); committed.get() < from+n && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	for round := range 2 {
		committing(20, 4*time.Second)
		victim := leaderNow(ctx, clients, shard)
		if victim < 0 {
			t.Fatal("no leader for the accounts' shard")
		}
		kill := time.Now()
		nodes[victim].kill()
		t.Logf("round %d: killed node %d, the accounts' leader", round, victim)
		// Transfers under the next leader, and the victim's lease (2 s) expired.
		committing(5, 4*time.Second)
		time.Sleep(max(3*time.Second-time.Since(kill), 0))
		nodes[victim].restart()
	}
	committing(20, 2*time.Second)
	stop()
	wg.Wait()
	if v := violation.Load(); v != nil {
		t.Fatal(*v)
	}
	t.Logf("%d transfers committed, %d failed (retried with a new transaction), %d snapshot reads summed to %d",
		committed.get(), failed.get(), reads.get(), accounts*start)
	c := nodes[0].client(t)
	waitReplicated(t, c, 3, 3, 60*time.Second)
	if sum, neg, err := accountsSum(ctx, c, dbn); err != nil || sum != accounts*start || neg {
		t.Fatalf("after the run the accounts sum to %d (negative: %v, %v), want %d", sum, neg, err, accounts*start)
	}
	checkReplicasAgree(t, nodes)
}

// leaderNow returns the index of the node leading shard, asking the nodes in turn; -1 when
// none answers with a leader.
func leaderNow(ctx context.Context, clients []*mongo.Client, shard int) int {
	for _, c := range clients {
		var res struct {
			Shards []shardReplicas `bson:"shards"`
		}
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Database("admin").RunCommand(qctx, bson.D{{Key: "listShards", Value: 1}}).Decode(&res)
		cancel()
		if err != nil || shard >= len(res.Shards) {
			continue
		}
		if l := res.Shards[shard].leaderOf(); l != "" {
			return int(l[len(l)-1] - 'a')
		}
	}
	return -1
}

// transfer moves one unit from account from to account to in a transaction on c; when read is
// set it first checks, in the same snapshot, that the accounts sum to their total, recording
// a violation.
func transfer(ctx context.Context, c *mongo.Client, dbn string, from, to int, read bool, reads *atomicCounter, violation *atomic.Pointer[string]) error {
	sess, err := c.StartSession()
	if err != nil {
		return err
	}
	defer sess.EndSession(context.Background())
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = sess.WithTransaction(tctx, func(sctx context.Context) (any, error) {
		coll := c.Database(dbn).Collection("accounts")
		if read {
			sum, neg, err := accountsSum(sctx, c, dbn)
			if err != nil {
				return nil, err
			}
			if sum != 10*1000 || neg {
				v := fmt.Sprintf("a snapshot read summed to %d (negative: %v)", sum, neg)
				violation.Store(&v)
			}
			reads.add(1)
		}
		var acc bson.M
		if err := coll.FindOne(sctx, bson.D{{Key: "_id", Value: from}}).Decode(&acc); err != nil {
			return nil, err
		}
		if acc["balance"].(int32) <= 0 {
			return nil, nil
		}
		if _, err := coll.UpdateOne(sctx, bson.D{{Key: "_id", Value: from}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "balance", Value: -1}}}}); err != nil {
			return nil, err
		}
		_, err := coll.UpdateOne(sctx, bson.D{{Key: "_id", Value: to}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "balance", Value: 1}}}})
		return nil, err
	})
	return err
}

// accountsSum sums the balances (in ctx's transaction, if any) and reports a negative one.
func accountsSum(ctx context.Context, c *mongo.Client, dbn string) (int, bool, error) {
	cur, err := c.Database(dbn).Collection("accounts").Find(ctx, bson.D{})
	if err != nil {
		return 0, false, err
	}
	var all []bson.M
	if err := cur.All(ctx, &all); err != nil {
		return 0, false, err
	}
	sum, neg := 0, false
	for _, a := range all {
		b := int(a["balance"].(int32))
		sum += b
		neg = neg || b < 0
	}
	return sum, neg, nil
}

// atomicCounter counts across goroutines.
type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) add(d int64) { c.n.Add(d) }
func (c *atomicCounter) get() int64  { return c.n.Load() }
