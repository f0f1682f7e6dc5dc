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

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestShardSplitBySize loads a collection past a tiny partition size: partitions split,
// while a concurrent reader counts the first phase's documents exactly and a cursor opened
// before the splits returns every document of the first phase once.
func TestShardSplitBySize(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--partition-max-bytes", "60000", "--partition-check-interval", "100ms")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("sizesplit")
	shardColl(t, c, "sizesplit.people", "region")
	coll := db.Collection("people")
	const first = 2000
	insertPeople(t, coll, 0, first, 1000, "one")
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cur.Close(ctx) }()
	seen := map[int32]bool{}
	for i := 0; i < 10 && cur.Next(ctx); i++ {
		seen[cur.Current.Lookup("_id").Int32()] = true
	}
	stop := make(chan struct{})
	var bad atomic.Value
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := coll.CountDocuments(ctx, bson.D{{Key: "phase", Value: "one"}})
			if err != nil || n != first {
				bad.Store(fmt.Sprintf("count of the first phase: %d, %v", n, err))
				return
			}
		}
	}()
	insertPeople(t, coll, first, 6000, 1000, "two")
	waitFor(t, 20*time.Second, "size splits", func() bool { return numPartitions(t, db, "people") >= 8 })
	close(stop)
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	drainCursor(t, cur, seen)
	// The cursor reads the present at each getMore: every document of the first phase once,
	// and those of the second it reaches (in hash order, after its position).
	for id := range int32(first) {
		if !seen[id] {
			t.Fatalf("cursor opened before the splits did not return document %d of the first phase (%d returned)", id, len(seen))
		}
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != first+6000 {
		t.Fatalf("%d documents after the splits", n)
	}
	if !strings.Contains(srv.log.String(), `"reason": "size"`) {
		t.Fatalf("no size split in the log")
	}
	var st struct {
		Sharding struct {
			MaxChunkSizeInBytes int64
			PartitionManager    struct{ Splits int64 }
		}
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Sharding.MaxChunkSizeInBytes != 60000 || st.Sharding.PartitionManager.Splits < 7 {
		t.Fatalf("serverStatus.sharding = %+v, want maxChunkSizeInBytes 60000 and at least 7 splits", st.Sharding)
	}
}

// TestShardSingleKeyHotKey checks that a partition holding one logical key does not split
// and is reported, and that the logical-partition limit refuses writes naming the key.
func TestShardSingleKeyHotKey(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--partition-max-bytes", "20000", "--logical-partition-max-bytes", "60000",
		"--partition-check-interval", "100ms")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("hotkey")
	shardColl(t, c, "hotkey.one", "region", bson.E{Key: "numInitialChunks", Value: 1})
	coll := db.Collection("one")
	var err error
	n := 0
	for ; n < 1000 && err == nil; n++ {
		_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: n}, {Key: "region", Value: "hot"}, {Key: "pad", Value: strings.Repeat("x", 200)}})
	}
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 153 || !strings.Contains(we.WriteErrors[0].Message, `"hot"`) {
		t.Fatalf("logical partition limit: want code 153 naming the key, got %v after %d inserts", err, n)
	}
	waitFor(t, 10*time.Second, "hot key report", func() bool {
		return len(partitionStats(t, db, "one")["hotKeys"].(bson.A)) > 0
	})
	if p := numPartitions(t, db, "one"); p != 1 {
		t.Fatalf("a single-key partition split into %d", p)
	}
}

// TestShardMoveWithOpenCursor moves partitions between two shards while a cursor is open
// and counts run: every document is seen exactly once; a restart keeps the map.
func TestShardMoveWithOpenCursor(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("moves")
	shardColl(t, c, "moves.people", "region", bson.E{Key: "numInitialChunks", Value: 4})
	coll := db.Collection("people")
	const total = 3000
	insertPeople(t, coll, 0, total, 500, "one")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "phase", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(50))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cur.Close(ctx) }()
	seen := map[int32]bool{}
	for i := 0; i < 50 && cur.Next(ctx); i++ {
		seen[cur.Current.Lookup("_id").Int32()] = true
	}
	stop := make(chan struct{})
	var bad atomic.Value
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			n1, err1 := coll.CountDocuments(ctx, bson.D{})
			n2, err2 := coll.EstimatedDocumentCount(ctx)
			n3, err3 := coll.CountDocuments(ctx, bson.D{{Key: "phase", Value: "one"}}) // index scan
			if n1 != total || n2 != total || n3 != total || err1 != nil || err2 != nil || err3 != nil {
				bad.Store(fmt.Sprintf("counts during moves: %d %d %d (%v %v %v)", n1, n2, n3, err1, err2, err3))
				return
			}
		}
	}()
	for round := 0; round < 2; round++ {
		for k := 0; k < 8; k++ {
			to := fmt.Sprintf("shard-%d", (k+round)%2)
			err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "moveChunk", Value: "moves.people"},
				{Key: "find", Value: bson.D{{Key: "region", Value: fmt.Sprintf("k%d", k*37)}}}, {Key: "to", Value: to}}).Err()
			if err != nil {
				t.Fatalf("moveChunk: %v", err)
			}
		}
	}
	time.Sleep(6 * time.Second) // past the source ranges' grace period: they are deleted
	close(stop)
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	drainCursor(t, cur, seen)
	if len(seen) != total {
		t.Fatalf("cursor open during the moves returned %d documents, want %d", len(seen), total)
	}
	before := partitionStats(t, db, "people")["partitions"]
	srv.stop()
	srv.restart()
	c2 := srv.client(t)
	after := partitionStats(t, c2.Database("moves"), "people")["partitions"]
	if fmt.Sprint(shardsOf(before)) != fmt.Sprint(shardsOf(after)) {
		t.Fatalf("partition map changed over a restart:\n%v\n%v", before, after)
	}
	if n, _ := c2.Database("moves").Collection("people").CountDocuments(ctx, bson.D{}); n != total {
		t.Fatalf("%d documents after restart", n)
	}
}

// shardsOf lists (id, shard) of partitionStats' partitions.
func shardsOf(parts any) []string {
	var out []string
	for _, p := range parts.(bson.A) {
		m := shardM(p)
		out = append(out, fmt.Sprint(m["id"], m["shard"]))
	}
	return out
}

// TestShardLoadSplit drives load at a collection with a tiny load threshold: a partition
// splits by load, and no partition moves for load between the two shards of one server
// (a move would add its copy's work to the machine both shards share), though the
// collection starts with one partition, on shard 0, and shard 1 carries nothing.
func TestShardLoadSplit(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--split-load-ru", "50", "--split-load-window", "1s",
		"--partition-check-interval", "200ms")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("loadsplit")
	shardColl(t, c, "loadsplit.people", "region", bson.E{Key: "numInitialChunks", Value: 1})
	coll := db.Collection("people")
	deadline := time.Now().Add(30 * time.Second)
	base := 0
	for !strings.Contains(srv.log.String(), `"reason": "load"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no load split within 30s:\n%v", partitionStats(t, db, "people"))
		}
		insertPeople(t, coll, base, 500, 200, "load")
		base += 500
	}
	if n := numPartitions(t, db, "people"); n < 2 {
		t.Fatalf("%d partitions after a load split", n)
	}
	// More load, for more load splits and whatever the balancer would do about them.
	for stop := time.Now().Add(3 * time.Second); time.Now().Before(stop); base += 500 {
		insertPeople(t, coll, base, 500, 200, "load")
	}
	for _, line := range strings.Split(srv.log.String(), "\n") {
		if strings.Contains(line, "moved partition") && (strings.Contains(line, `"reason": "load"`) || strings.Contains(line, `"reason": "balance-load"`)) {
			t.Errorf("a partition moved for load between the shards of one server: %s", line)
		}
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != int64(base) {
		t.Fatalf("%d documents, want %d", n, base)
	}
}

// TestShardKillDuringSplitsAndMoves kills the server with SIGKILL, at a random moment,
// while inserts drive continuous size splits and moves between two shards, restarts it and
// checks that every acknowledged document is there exactly once and that the partition
// map agrees with the data; three rounds on the same data.
func TestShardKillDuringSplitsAndMoves(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--partition-max-bytes", "40000", "--partition-check-interval", "50ms",
		"--balance-min-bytes", "0")
	shardColl(t, srv.client(t), "killsplit.people", "region", bson.E{Key: "numInitialChunks", Value: 1})
	acked := map[int32]bool{}
	for round := 0; round < 3; round++ {
		killRound(t, srv, round, acked)
	}
}

// killRound runs writers and moves, kills the server after a random delay, restarts it
// and checks the data against acked (which it extends).
func killRound(t *testing.T, srv *server, round int, acked map[int32]bool) {
	ctx := context.Background()
	c := srv.client(t, options.Client().SetRetryWrites(false))
	coll := c.Database("killsplit").Collection("people")
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				id := int32(round*10_000_000 + w*1_000_000 + i)
				_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "region", Value: fmt.Sprintf("k%d", i%300)},
					{Key: "pad", Value: strings.Repeat("y", 150)}})
				if err != nil {
					return
				}
				mu.Lock()
				acked[id] = true
				mu.Unlock()
			}
		}(w)
	}
	wg.Add(1)
	go func() { // moves besides the balancer's: a key's partition to alternating shards
		defer wg.Done()
		for i := 0; ; i++ {
			err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "moveChunk", Value: "killsplit.people"},
				{Key: "find", Value: bson.D{{Key: "region", Value: fmt.Sprintf("k%d", i*7%300)}}},
				{Key: "to", Value: fmt.Sprintf("shard-%d", i%2)}}).Err()
			var ce mongo.CommandError
			if err != nil && (!errors.As(err, &ce) || ce.Code != 117) {
				return
			}
		}
	}()
	time.Sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
	srv.kill()
	wg.Wait()
	srv.restart()
	c2 := srv.client(t)
	validateClean(t, c2.Database("killsplit"), "people", fmt.Sprintf("round %d", round))
	coll2 := c2.Database("killsplit").Collection("people")
	cur, err := coll2.Find(ctx, bson.D{}, options.Find().SetBatchSize(1000))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int32]bool{}
	drainCursor(t, cur, seen)
	for id := range acked {
		if !seen[id] {
			t.Fatalf("round %d: acknowledged document %d lost", round, id)
		}
	}
	n, err := coll2.CountDocuments(ctx, bson.D{})
	if err != nil || n != int64(len(seen)) {
		t.Fatalf("round %d: count %d (%v), find returned %d", round, n, err, len(seen))
	}
	var sum int64
	st := partitionStats(t, c2.Database("killsplit"), "people")
	for _, p := range st["partitions"].(bson.A) {
		sum += shardM(p)["documents"].(int64)
	}
	if sum != int64(len(seen)) {
		t.Fatalf("round %d: partitionStats counts %d documents, find %d", round, sum, len(seen))
	}
	for id := range seen {
		acked[id] = true // unacknowledged but durable: it must stay from now on
	}
	t.Logf("round %d: %d documents in %d partitions after the kill", round, len(seen), st["numPartitions"])
}
