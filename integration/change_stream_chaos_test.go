package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// TestChangeStreamChaos: a change stream on a collection sharded on a hashed key over the
// shards of a 3-node cluster (--replicas 3: every shard a group of three copies) while 4
// writers insert, update and delete documents with retryable w: "majority" writes, the
// partitions split (small --partition-max-bytes) and move (the balancer, with no minimum,
// and a moveChunk every 700 ms), and nodes are SIGKILLed and restarted: in turn one the
// stream does not read through and the one it does. The stream is the driver's Watch
// through one node, resumed from its last token through the next node whenever it fails.
// Afterwards every acknowledged write appears in it exactly once (a write that failed at most
// once), each document's events in the order of its writes, every event in cluster-time
// order; resuming after a sample of its tokens, through each node, yields the same suffix;
// and partitionStats showed splits and moves while the stream read. CLEAVE_LONG=1 runs 10
// kill rounds 8 s apart instead of 2 rounds 4 s apart (make changestream-chaos).
func TestChangeStreamChaos(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kill rounds are slow")
	}
	rounds, every, samples := 2, 4*time.Second, 50
	if os.Getenv("CLEAVE_LONG") != "" {
		rounds, every, samples = 10, 8*time.Second, 200
	}
	start := time.Now()
	_, nodes, seeds := replicatedNodes(t, 3, "--partition-max-bytes", "16000",
		"--partition-check-interval", "100ms", "--balance-min-bytes", "0")
	t.Cleanup(func() { dumpLogs(t, nodes) })
	dbn := dbName(t)
	ns := dbn + ".docs"
	admin := seedClient(t, seeds)
	shardColl(t, admin, ns, "k", bson.E{Key: "numInitialChunks", Value: 2})
	readers := make([]*mongo.Client, len(nodes)) // one per node: the stream's, and the resumes'
	for i, s := range nodes {
		// A node down for longer than the selection timeout fails the stream's own resume
		// (the driver's), and the stream resumes through the next node.
		readers[i] = s.client(t, options.Client().SetServerSelectionTimeout(time.Second))
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	stream := openChaosStream(t, readers, dbn)
	streamDone := make(chan struct{})
	go func() { defer close(streamDone); stream.run(ctx) }()
	parts := &partitionWatch{}
	partsDone := make(chan struct{})
	go func() { defer close(partsDone); parts.run(ctx, admin.Database(dbn), "docs") }()
	moverDone := make(chan struct{})
	go func() { defer close(moverDone); chaosMover(ctx, admin, ns, len(nodes)) }()

	wlog := &chaosWriteLog{docs: map[string][]chaosWrite{}}
	writeCtx, stopWrites := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 4 {
		coll := seedClient(t, seeds).Database(dbn).Collection("docs")
		wg.Add(1)
		go func() { defer wg.Done(); chaosWriter(writeCtx, coll, w, wlog) }()
	}
	for round := range rounds {
		time.Sleep(every / 2)
		reading := int(stream.node.Load())
		victim := reading // odd rounds: the stream's own node
		if round%2 == 0 {
			victim = (reading + 1 + round/2%2) % len(nodes)
		}
		killed := time.Now()
		nodes[victim].kill()
		if !wlog.ackedSince(killed, 30*time.Second) {
			t.Fatalf("round %d: no write acknowledged within 30s of killing node %d (last error: %s)", round, victim, wlog.lastError())
		}
		time.Sleep(max(2*time.Second-time.Since(killed), 0))
		nodes[victim].restart()
		waitReplicated(t, readers[(victim+1)%len(nodes)], 3, 3, 60*time.Second)
		t.Logf("round %d: killed node %d (the stream read through node %d); writes resumed, node back", round, victim, reading)
		time.Sleep(every / 2)
	}
	stopWrites()
	wg.Wait()
	for deadline := time.Now().Add(60 * time.Second); !stream.saw(wlog.ackedKeys()) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // time for an event that should not be there
	stop()
	<-streamDone
	<-partsDone
	<-moverDone
	events := stream.snapshot()
	t.Logf("%d kill rounds: %d writes acknowledged (%d failed), %d events, the stream reopened %d times, %d splits and %d moves seen (%d partitions at most)",
		rounds, wlog.acked, wlog.failed, len(events), len(stream.reopenedAt), parts.splits, parts.moves, parts.most)
	checkChaosEvents(t, wlog, events)
	if t.Failed() {
		diagnoseChaos(t, readers, dbn, stream, wlog)
	}
	if parts.splits == 0 || parts.moves == 0 || len(stream.reopenedAt) == 0 {
		t.Fatalf("partitionStats showed %d splits and %d moves while the stream read, which was reopened %d times: no chaos",
			parts.splits, parts.moves, len(stream.reopenedAt))
	}
	resumed, sample := time.Now(), resumeSample(events, stream.reopenedAt, samples)
	checkChaosResumes(t, readers, dbn, events, sample)
	t.Logf("resumes after %d tokens checked in %v; %v in all", len(sample), time.Since(resumed).Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond))
}

// seedClient connects to every node of the seed list with retryable w: "majority" writes.
func seedClient(t *testing.T, seeds string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(seeds).SetRetryWrites(true).
		SetWriteConcern(writeconcern.Majority()).SetTimeout(20 * time.Second).SetHeartbeatInterval(500 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = c.Disconnect(ctx)
	})
	return c
}

// chaosWrite is one write of TestChangeStreamChaos: the key of the event it makes
// ("insert/<_id>", "update/<_id>/<v>", "delete/<_id>") and whether it was acknowledged.
type chaosWrite struct {
	key   string
	acked bool
}

// chaosWriteLog is every write the writers sent, per document in the order sent. A writer
// leaves a document alone after a write of it failed, so that only a document's last write
// may be unacknowledged.
type chaosWriteLog struct {
	mu       sync.Mutex
	docs     map[string][]chaosWrite
	acked    int
	failed   int
	lastOK   time.Time
	lastErr  string
	mismatch []string // acknowledged writes that found their document missing
}

// note records the write key of doc with its outcome.
func (l *chaosWriteLog) note(doc, key string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.docs[doc] = append(l.docs[doc], chaosWrite{key: key, acked: err == nil})
	if err != nil {
		l.failed++
		if !errors.Is(err, context.Canceled) {
			l.lastErr = err.Error()
		}
		return
	}
	l.acked++
	l.lastOK = time.Now()
}

// lastError is the last write error other than the writers' cancellation.
func (l *chaosWriteLog) lastError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

// ackedSince waits until a write is acknowledged after t0, or for timeout.
func (l *chaosWriteLog) ackedSince(t0 time.Time, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		l.mu.Lock()
		ok := l.lastOK.After(t0)
		l.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// ackedKeys returns the event keys of every acknowledged write.
func (l *chaosWriteLog) ackedKeys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var keys []string
	for _, ws := range l.docs {
		for _, w := range ws {
			if w.acked {
				keys = append(keys, w.key)
			}
		}
	}
	return keys
}

// chaosWriter inserts, updates ($set of v, a number unique to the write) and deletes its own
// documents until ctx ends. Each document has its own shard-key value.
func chaosWriter(ctx context.Context, coll *mongo.Collection, w int, l *chaosWriteLog) {
	rnd := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	pad := strings.Repeat("p", 300)
	var live []string
	for n := 0; ctx.Err() == nil; n++ {
		r := rnd.IntN(100)
		if len(live) == 0 || r < 45 {
			id := fmt.Sprintf("w%d-%d", w, n)
			_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "k", Value: "k" + id}, {Key: "pad", Value: pad}})
			l.note(id, "insert/"+id, err)
			if err == nil {
				live = append(live, id)
			}
			continue
		}
		i := rnd.IntN(len(live))
		id := live[i]
		filter := bson.D{{Key: "_id", Value: id}, {Key: "k", Value: "k" + id}}
		var err error
		var key string
		if r < 85 {
			key = fmt.Sprintf("update/%s/%d", id, n)
			var res *mongo.UpdateResult
			if res, err = coll.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: int64(n)}}}}); err == nil && res.ModifiedCount != 1 {
				l.missing(key, res.MatchedCount)
			}
		} else {
			key = "delete/" + id
			var res *mongo.DeleteResult
			if res, err = coll.DeleteOne(ctx, filter); err == nil && res.DeletedCount != 1 {
				l.missing(key, res.DeletedCount)
			}
		}
		l.note(id, key, err)
		if err != nil || r >= 85 { // deleted, or in doubt after a failed write
			live = append(live[:i], live[i+1:]...)
		}
	}
}

// missing records an acknowledged write that changed no document although its document was
// there.
func (l *chaosWriteLog) missing(key string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mismatch = append(l.mismatch, fmt.Sprintf("%s changed nothing (%d matched)", key, n))
}

// chaosEvent is what TestChangeStreamChaos keeps of an event.
type chaosEvent struct {
	id   bson.Raw // the resume token
	key  string   // as chaosWrite's
	doc  string
	at   bson.Timestamp
	node int // the node the stream read it through
}

// chaosStream is the stream of TestChangeStreamChaos: the driver's Watch through one node,
// resumed through the next node after the last token read whenever it fails.
type chaosStream struct {
	readers []*mongo.Client
	dbn     string
	node    atomic.Int32 // the node read through
	mu      sync.Mutex
	cs      *mongo.ChangeStream
	token   bson.Raw
	first   bson.Raw
	events  []chaosEvent
	seen    map[string]int
	// reopenedAt holds, for each reopening, how many events were read before it.
	reopenedAt []int
	errs       []string
}

// openChaosStream opens the stream through node 0.
func openChaosStream(t *testing.T, readers []*mongo.Client, dbn string) *chaosStream {
	t.Helper()
	cs, err := readers[0].Database(dbn).Collection("docs").Watch(context.Background(), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	return &chaosStream{readers: readers, dbn: dbn, cs: cs, token: cs.ResumeToken(), first: cs.ResumeToken(), seen: map[string]int{}}
}

// run reads events until ctx ends.
func (s *chaosStream) run(ctx context.Context) {
	for ctx.Err() == nil {
		for s.cs.Next(ctx) {
			s.add(s.cs)
		}
		err := s.cs.Err()
		_ = s.cs.Close(context.Background())
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		s.errs = append(s.errs, fmt.Sprintf("node %d: %v", s.node.Load(), err))
		s.reopenedAt = append(s.reopenedAt, len(s.events))
		s.mu.Unlock()
		for ctx.Err() == nil {
			n := (s.node.Load() + 1) % int32(len(s.readers))
			s.node.Store(n)
			cs, err := s.readers[n].Database(s.dbn).Collection("docs").Watch(ctx, mongo.Pipeline{},
				options.ChangeStream().SetResumeAfter(s.token))
			if err == nil {
				s.cs = cs
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// add records the stream's current event.
func (s *chaosStream) add(cs *mongo.ChangeStream) {
	var e csEvent
	if err := cs.Decode(&e); err != nil {
		e.OperationType = "undecodable: " + err.Error() // an event of no write: the check reports it
	}
	id := fmt.Sprint(e.DocumentKey["_id"])
	key := e.OperationType + "/" + id
	if e.OperationType == "update" {
		key = fmt.Sprintf("update/%s/%v", id, e.Update.UpdatedFields["v"])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = cs.ResumeToken()
	s.events = append(s.events, chaosEvent{id: append(bson.Raw(nil), e.ID...), key: key, doc: id, at: e.ClusterTime, node: int(s.node.Load())})
	s.seen[key]++
}

// saw reports whether the stream has read an event for each of keys.
func (s *chaosStream) saw(keys []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if s.seen[k] == 0 {
			return false
		}
	}
	return true
}

// snapshot returns the events read.
func (s *chaosStream) snapshot() []chaosEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events
}

// partitionWatch counts, from partitionStats read every 200 ms, the splits (a partition id
// gone: split into two new ones) and moves (a partition id seen on another shard than before)
// of a collection's partitions.
type partitionWatch struct {
	shardOf map[int64]string // partition id → shard
	splits  int
	moves   int
	most    int // partitions at most
}

// run polls until ctx ends; a read that fails (a node down) is skipped.
func (w *partitionWatch) run(ctx context.Context, db *mongo.Database, coll string) {
	for ; ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var st struct {
			Partitions []struct {
				ID    int64  `bson:"id"`
				Shard string `bson:"shard"`
			} `bson:"partitions"`
		}
		err := db.RunCommand(qctx, bson.D{{Key: "partitionStats", Value: coll}}).Decode(&st)
		cancel()
		if err != nil || len(st.Partitions) == 0 {
			continue
		}
		w.most = max(w.most, len(st.Partitions))
		now := map[int64]string{}
		for _, p := range st.Partitions {
			now[p.ID] = p.Shard
			if was, ok := w.shardOf[p.ID]; ok && was != p.Shard {
				w.moves++
			}
		}
		for id := range w.shardOf {
			if _, ok := now[id]; !ok {
				w.splits++
			}
		}
		w.shardOf = now
	}
}

// chaosMover moves, every 700 ms until ctx ends, the partition of a random shard-key value to
// the shards in turn, besides the balancer's moves (the hashed writes keep the shards too even
// for it to move much); a move that fails (a node down, the partition busy or already there)
// is skipped.
func chaosMover(ctx context.Context, c *mongo.Client, ns string, shards int) {
	for i := 0; ctx.Err() == nil; i++ {
		time.Sleep(700 * time.Millisecond)
		qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_ = c.Database("admin").RunCommand(qctx, bson.D{{Key: "moveChunk", Value: ns},
			{Key: "find", Value: bson.D{{Key: "k", Value: fmt.Sprintf("kw%d-%d", i%4, rand.IntN(200))}}},
			{Key: "to", Value: fmt.Sprintf("shard-%d", i%shards)}}).Err()
		cancel()
	}
}

// checkChaosEvents checks the stream against the writes: per document, its events are its
// acknowledged writes in order, then at most its last write if that one failed; no event is
// of anything else; cluster times never go back.
func checkChaosEvents(t *testing.T, l *chaosWriteLog, events []chaosEvent) {
	t.Helper()
	for _, m := range l.mismatch {
		t.Errorf("acknowledged write: %s", m)
	}
	got := map[string][]string{}
	for i, e := range events {
		if i > 0 && e.at.Before(events[i-1].at) {
			t.Errorf("event %d (%s, through node %d) at %v, before event %d (%s, through node %d) at %v",
				i, e.key, e.node, e.at, i-1, events[i-1].key, events[i-1].node, events[i-1].at)
		}
		got[e.doc] = append(got[e.doc], e.key)
	}
	for doc, ws := range l.docs {
		var want []string
		for _, w := range ws {
			if w.acked {
				want = append(want, w.key)
			}
		}
		last := ws[len(ws)-1]
		g := got[doc]
		ok := strings.Join(g, " ") == strings.Join(want, " ") ||
			!last.acked && strings.Join(g, " ") == strings.Join(append(want, last.key), " ")
		if !ok {
			t.Errorf("document %s: events %v, want the acknowledged writes %v (then, maybe, the failed %v)", doc, g, want, last)
		}
		delete(got, doc)
	}
	for doc, g := range got {
		t.Errorf("events %v of document %s, never written", g, doc)
	}
}

// resumeSample picks up to n tokens' indices spread over events, plus those read just before
// and after each reopening of the stream.
func resumeSample(events []chaosEvent, reopenedAt []int, n int) []int {
	var at []int
	for i := range n {
		at = append(at, i*len(events)/n)
	}
	for _, r := range reopenedAt {
		at = append(at, r-1, r)
	}
	var out []int
	for _, i := range at {
		if i >= 0 && i < len(events)-1 {
			out = append(out, i)
		}
	}
	return out
}

// checkChaosResumes resumes after each sampled event, through the nodes in turn, and checks
// that the events after it are those the stream read.
func checkChaosResumes(t *testing.T, readers []*mongo.Client, dbn string, events []chaosEvent, sample []int) {
	t.Helper()
	for k, i := range sample {
		node := k % len(readers)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		rs, err := readers[node].Database(dbn).Collection("docs").Watch(ctx, mongo.Pipeline{},
			options.ChangeStream().SetResumeAfter(events[i].id))
		if err != nil {
			cancel()
			t.Fatalf("resume after event %d through node %d: %v", i, node, err)
		}
		for j := i + 1; j < len(events); j++ {
			if !rs.Next(ctx) {
				t.Fatalf("resumed after event %d through node %d: %d events, want %d: %v", i, node, j-i-1, len(events)-i-1, rs.Err())
			}
			var e csEvent
			if err := rs.Decode(&e); err != nil {
				t.Fatal(err)
			}
			if !bytesEqual(e.ID, events[j].id) {
				t.Fatalf("resumed after event %d through node %d: event %d is %s %v at %v, want %s at %v",
					i, node, j, e.OperationType, e.DocumentKey, e.ClusterTime, events[j].key, events[j].at)
			}
		}
		_ = rs.Close(context.Background())
		cancel()
	}
}

// diagnoseChaos reads the whole stream again from its first token through each node and
// says which of the acknowledged writes the live stream missed it finds.
func diagnoseChaos(t *testing.T, readers []*mongo.Client, dbn string, s *chaosStream, l *chaosWriteLog) {
	t.Logf("stream errors: %v; reopened at %v", s.errs, s.reopenedAt)
	var missed []string
	for _, k := range l.ackedKeys() {
		if s.seen[k] == 0 {
			missed = append(missed, k)
		}
	}
	for node, c := range readers {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		rs, err := c.Database(dbn).Collection("docs").Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(s.first))
		if err != nil {
			t.Logf("node %d: %v", node, err)
			cancel()
			continue
		}
		seen := map[string]int{}
		n, logged := 0, 0
		for {
			tctx, tcancel := context.WithTimeout(ctx, 3*time.Second)
			ok := rs.Next(tctx)
			tcancel()
			if !ok {
				break
			}
			var e csEvent
			_ = rs.Decode(&e)
			id := fmt.Sprint(e.DocumentKey["_id"])
			key := e.OperationType + "/" + id
			if e.OperationType == "update" {
				key = fmt.Sprintf("update/%s/%v", id, e.Update.UpdatedFields["v"])
			}
			seen[key]++
			n++
			if s.seen[key] == 0 && node == 0 && logged < 20 {
				logged++
				t.Logf("missed by the stream: %s at %v (token %s)", key, e.ClusterTime, e.ID)
			}
		}
		found := 0
		for _, k := range missed {
			if seen[k] > 0 {
				found++
			}
		}
		dups := 0
		for _, c := range seen {
			if c > 1 {
				dups++
			}
		}
		t.Logf("node %d: reread %d events (live stream %d); %d of the %d missed writes there; %d duplicated", node, n, len(s.events), found, len(missed), dups)
		_ = rs.Close(ctx)
		cancel()
	}
}
