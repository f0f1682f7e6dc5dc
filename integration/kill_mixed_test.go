package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestKillMixedWorkload kills the server with SIGKILL at a random moment of a mixed
// workload (inserts, $inc updates, deletes, moveChunk, and an index build and an index drop
// each round, with continuous size splits and balancer moves between two shards), restarts
// it, checks every acknowledged operation against a full scan and listIndexes and runs
// validate (full), which checks every index against the documents; twenty rounds on the
// same data. At the end, the partitions must have split and sit on both shards.
func TestKillMixedWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds are slow")
	}
	t.Parallel()
	// A partition splits at 12 kB, about 150 of the workload's documents, so that it splits
	// in the first rounds however slowly a loaded machine inserts (at 40 kB, 500 documents
	// inserted in 20 rounds on a busy CI runner did not always split).
	srv := startServer(t, "--shards", "2", "--partition-max-bytes", "12000", "--partition-check-interval", "50ms",
		"--balance-min-bytes", "0")
	c := srv.client(t)
	shardColl(t, c, "killmixed.c", "region", bson.E{Key: "numInitialChunks", Value: 1})
	// A secondary index on the counter: every $inc moves an index entry.
	if _, err := c.Database("killmixed").Collection("c").Indexes().CreateOne(context.Background(),
		mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	// Disconnected while the server is up: at the end of the test, after the kills, the
	// driver would wait on its dead address.
	if err := c.Disconnect(context.Background()); err != nil {
		t.Fatal(err)
	}
	const rounds = 20
	m := &mixedModel{docs: map[int32]*mixedDoc{}, indexes: map[string]*mixedIndex{}, builds: map[bool]int{}}
	start := time.Now()
	for round := range rounds {
		mixedKillRound(t, srv, round, m)
	}
	t.Logf("%d rounds in %v; index builds acknowledged %d, killed %d", rounds, time.Since(start).Round(time.Millisecond),
		m.builds[true], m.builds[false])
	c = srv.client(t)
	defer func() { _ = c.Disconnect(context.Background()) }()
	var chunks []bson.M
	cur, err := c.Database("config").Collection("chunks").Find(context.Background(), bson.D{{Key: "ns", Value: "killmixed.c"}})
	if err == nil {
		err = cur.All(context.Background(), &chunks)
	}
	if err != nil {
		t.Fatal(err)
	}
	on := map[any]bool{}
	for _, ch := range chunks {
		on[ch["shard"]] = true
	}
	if len(chunks) < 4 || len(on) < 2 {
		t.Fatalf("after %d rounds, %d partitions on %d shards: the workload did not split and move", rounds, len(chunks), len(on))
	}
}

// mixedDoc is what the clients know of one document.
type mixedDoc struct {
	present     bool  // an acknowledged insert, or seen after a restart
	insertSent  bool  // an insert was sent but not acknowledged
	deleteSent  bool  // a delete was sent (acknowledged or not)
	deleteAcked bool  // the delete was acknowledged
	gone        bool  // absent after a restart: it must never come back
	incAcked    int64 // acknowledged increments (plus the value seen after the last restart)
	incSent     int64 // increments sent but not (yet) acknowledged
}

// mixedModel records every operation the clients sent and which were acknowledged.
type mixedModel struct {
	mu   sync.Mutex
	docs map[int32]*mixedDoc
	live []int32 // present ids no delete was sent for: what updates and deletes pick from
	bad  []string
	// indexes are the round indexes' states (name x<round>); builds counts the index builds
	// acknowledged (true) and cut by the kill (false).
	indexes map[string]*mixedIndex
	builds  map[bool]int
}

// mixedIndex is what the clients know of one index.
type mixedIndex struct {
	created, dropSent, dropped bool // createIndexes acknowledged; dropIndexes sent, acknowledged
	gone                       bool // absent after a restart
}

// fail records an anomaly a client saw while the server was up.
func (m *mixedModel) fail(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bad = append(m.bad, fmt.Sprintf(format, args...))
}

// pick returns a random live id, removing it from the live list when remove is set.
func (m *mixedModel) pick(remove bool) (int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.live) == 0 {
		return 0, false
	}
	i := rand.IntN(len(m.live))
	id := m.live[i]
	if remove {
		m.live[i] = m.live[len(m.live)-1]
		m.live = m.live[:len(m.live)-1]
	}
	return id, true
}

// mixedKey is the shard key of document id.
func mixedKey(id int32) string { return fmt.Sprintf("k%d", id%300) }

// mixedKillRound runs the workload for 300–1200 ms, kills and restarts the server, checks
// the data and validate, and brings the model up to what the restart kept.
func mixedKillRound(t *testing.T, srv *server, round int, m *mixedModel) {
	// The workload's operations use wctx, cancelled at the kill: the driver would otherwise
	// wait out server selection before each client gives up.
	wctx, cancel := context.WithCancel(context.Background())
	c := srv.client(t, options.Client().SetRetryWrites(false).SetConnectTimeout(2*time.Second))
	coll := c.Database("killmixed").Collection("c")
	var killed atomic.Bool
	// failed records an error that came before the kill: the server was up, so it is a bug.
	failed := func(what string, err error) bool {
		if err == nil {
			return false
		}
		if !killed.Load() {
			m.fail("round %d: %s before the kill: %v", round, what, err)
		}
		return true
	}
	runFor := time.Duration(300+rand.IntN(900)) * time.Millisecond // until the kill
	var wg sync.WaitGroup
	for w := range 2 { // inserts
		wg.Go(func() {
			for i := 0; ; i++ {
				id := int32(round*10_000_000 + w*1_000_000 + i)
				d := &mixedDoc{insertSent: true}
				m.mu.Lock()
				m.docs[id] = d
				m.mu.Unlock()
				_, err := coll.InsertOne(wctx, bson.D{{Key: "_id", Value: id}, {Key: "region", Value: mixedKey(id)},
					{Key: "n", Value: int64(0)}, {Key: "pad", Value: "0123456789abcdef0123456789abcdef"}})
				if failed("insert", err) {
					return
				}
				m.mu.Lock()
				d.insertSent, d.present = false, true
				m.live = append(m.live, id)
				m.mu.Unlock()
			}
		})
	}
	for range 2 { // $inc by _id and shard key
		wg.Go(func() {
			for {
				id, ok := m.pick(false)
				if !ok {
					if wctx.Err() != nil { // killed with no document live: nothing to fail on
						return
					}
					time.Sleep(time.Millisecond)
					continue
				}
				by := int64(1 + rand.IntN(3))
				m.mu.Lock()
				d := m.docs[id]
				d.incSent += by
				m.mu.Unlock()
				res, err := coll.UpdateOne(wctx, bson.D{{Key: "_id", Value: id}, {Key: "region", Value: mixedKey(id)}},
					bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: by}}}})
				if failed("$inc", err) {
					return
				}
				m.mu.Lock()
				d.incSent -= by
				if res.MatchedCount == 1 {
					d.incAcked += by
				} else if !d.deleteSent {
					m.bad = append(m.bad, fmt.Sprintf("round %d: $inc of %d matched %d documents, and no delete was sent for it", round, id, res.MatchedCount))
				}
				m.mu.Unlock()
			}
		})
	}
	wg.Go(func() { // deletes by _id and shard key
		for {
			id, ok := m.pick(true)
			if !ok {
				if wctx.Err() != nil {
					return
				}
				time.Sleep(time.Millisecond)
				continue
			}
			m.mu.Lock()
			d := m.docs[id]
			d.deleteSent = true
			m.mu.Unlock()
			res, err := coll.DeleteOne(wctx, bson.D{{Key: "_id", Value: id}, {Key: "region", Value: mixedKey(id)}})
			if failed("delete", err) {
				return
			}
			if res.DeletedCount != 1 {
				m.fail("round %d: delete of present document %d deleted %d", round, id, res.DeletedCount)
			}
			m.mu.Lock()
			d.deleteAcked = true
			m.mu.Unlock()
			time.Sleep(time.Millisecond) // fewer deletes than inserts: the data grows
		}
	})
	wg.Go(func() { // an index build, then the drop of an older round's index
		// Even rounds build early (acknowledged builds must survive), odd ones just before the
		// kill, so that it lands in the build or the drop.
		wait := time.Duration(rand.IntN(200)) * time.Millisecond
		if round%2 == 1 {
			wait = runFor - time.Duration(10+rand.IntN(60))*time.Millisecond
		}
		time.Sleep(wait)
		name := fmt.Sprintf("x%d", round)
		x := &mixedIndex{}
		m.mu.Lock()
		m.indexes[name] = x
		m.mu.Unlock()
		_, err := coll.Indexes().CreateOne(wctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: -1}, {Key: name, Value: 1}},
			Options: options.Index().SetName(name)})
		m.mu.Lock()
		m.builds[err == nil]++
		x.created = err == nil
		m.mu.Unlock()
		if failed("createIndexes", err) {
			return
		}
		old := fmt.Sprintf("x%d", round-2)
		m.mu.Lock()
		ox := m.indexes[old]
		if ox == nil || ox.gone || ox.dropSent {
			m.mu.Unlock()
			return
		}
		ox.dropSent = true
		m.mu.Unlock()
		err = coll.Indexes().DropOne(wctx, old)
		if failed("dropIndexes", err) {
			return
		}
		m.mu.Lock()
		ox.dropped = true
		m.mu.Unlock()
	})
	wg.Go(func() { // moves besides the balancer's, as killRound makes them
		for i := 0; ; i++ {
			time.Sleep(time.Duration(20+rand.IntN(60)) * time.Millisecond)
			err := c.Database("admin").RunCommand(wctx, bson.D{{Key: "moveChunk", Value: "killmixed.c"},
				{Key: "find", Value: bson.D{{Key: "region", Value: fmt.Sprintf("k%d", i*7%300)}}},
				{Key: "to", Value: fmt.Sprintf("shard-%d", i%2)}}).Err()
			var ce mongo.CommandError
			if err != nil && errors.As(err, &ce) && ce.Code == 117 { // ConflictingOperationInProgress
				continue
			}
			if failed("moveChunk", err) {
				return
			}
		}
	})
	time.Sleep(runFor)
	killed.Store(true)
	srv.kill()
	cancel()
	wg.Wait()
	_ = c.Disconnect(wctx) // wctx is done: no graceful wait on a dead server
	t0 := time.Now()
	srv.restart()
	restartTook := time.Since(t0)
	ctx := context.Background()

	when := fmt.Sprintf("round %d", round)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.bad) > 0 {
		t.Fatalf("%s: %d anomalies while the server was up, the first: %s", when, len(m.bad), m.bad[0])
	}
	c2 := srv.client(t)
	cur, err := c2.Database("killmixed").Collection("c").Find(ctx, bson.D{},
		options.Find().SetBatchSize(1000).SetProjection(bson.D{{Key: "n", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int32]int64{}
	for cur.Next(ctx) {
		id := cur.Current.Lookup("_id").Int32()
		if _, dup := seen[id]; dup {
			t.Fatalf("%s: document %d returned twice", when, id)
		}
		seen[id] = cur.Current.Lookup("n").Int64()
	}
	if err := cur.Err(); err != nil {
		t.Fatalf("%s: cursor: %v", when, err)
	}
	for id, n := range seen {
		d := m.docs[id]
		switch {
		case d == nil:
			t.Fatalf("%s: document %d was never inserted", when, id)
		case d.gone:
			t.Fatalf("%s: document %d, absent after an earlier restart, is back", when, id)
		case d.deleteAcked:
			t.Fatalf("%s: acknowledged delete of %d undone by the kill", when, id)
		case n < d.incAcked || n > d.incAcked+d.incSent:
			t.Fatalf("%s: document %d has n = %d, acknowledged increments %d, unacknowledged %d",
				when, id, n, d.incAcked, d.incSent)
		}
	}
	lost, acked := 0, 0
	for id, d := range m.docs {
		if d.present && !d.deleteSent {
			acked++
			if _, ok := seen[id]; !ok {
				lost++
				if lost <= 5 {
					t.Errorf("%s: acknowledged insert %d (increments %d acknowledged) lost", when, id, d.incAcked)
				}
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%s: %d of %d acknowledged documents lost", when, lost, acked)
	}
	res := validateClean(t, c2.Database("killmixed"), "c", when)
	if errs, _ := res.Lookup("errors").Array().Values(); len(errs) > 0 {
		t.Fatalf("%s: validate is valid but lists errors: %s", when, res)
	}
	// While the balancer moves a partition, its documents are on both shards (validate warns
	// and counts both copies); otherwise validate's records are the documents the scan read.
	moving := false
	if ws, _ := res.Lookup("warnings").Array().Values(); len(ws) > 0 {
		for _, w := range ws {
			moving = moving || strings.Contains(w.StringValue(), "being moved")
		}
	}
	if n := res.Lookup("nrecords").AsInt64(); !moving && n != int64(len(seen)) {
		t.Fatalf("%s: validate counts %d records, the scan %d, and no move is in flight", when, n, len(seen))
	}
	checkMixedIndexes(t, c2.Database("killmixed").Collection("c"), when, m)
	// What the restart kept is from now on what the clients know.
	m.live = m.live[:0]
	for id, d := range m.docs {
		if n, ok := seen[id]; ok {
			*d = mixedDoc{present: true, incAcked: n}
			m.live = append(m.live, id)
		} else {
			*d = mixedDoc{gone: true}
		}
	}
	t.Logf("%s: %d documents (%d acknowledged present) in %d partitions; restart %v, checks %v", when, len(seen), acked,
		partitionStats(t, c2.Database("killmixed"), "c")["numPartitions"], restartTook.Round(time.Millisecond),
		time.Since(t0.Add(restartTook)).Round(time.Millisecond))
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	_ = c2.Disconnect(dctx) // before the next kill: its monitor would linger at the dead address
	dcancel()
}

// checkMixedIndexes compares the collection's indexes after a restart with what the
// clients were told: an acknowledged build is there unless its drop was sent, an
// acknowledged drop is not, an index absent once never comes back. What it finds is from
// then on what the clients know.
func checkMixedIndexes(t *testing.T, c *mongo.Collection, when string, m *mixedModel) {
	t.Helper()
	specs, err := c.Indexes().ListSpecifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, s := range specs {
		have[s.Name] = true
	}
	for name, x := range m.indexes {
		switch {
		case have[name] && x.gone:
			t.Fatalf("%s: index %s, absent after an earlier restart, is back", when, name)
		case have[name] && x.dropped:
			t.Fatalf("%s: acknowledged drop of index %s undone by the kill", when, name)
		case !have[name] && x.created && !x.dropSent:
			t.Fatalf("%s: acknowledged index %s lost", when, name)
		}
		*x = mixedIndex{created: have[name], gone: !have[name]}
	}
}
