package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// The sizes of the linearizability test: linWorkers clients over linKeys registers for
// linDuration (CLEAVE_LONG=1: linLongDuration, make linearizability).
const (
	linWorkers      = 6
	linKeys         = 6
	linDuration     = 20 * time.Second
	linLongDuration = 3 * time.Minute
	linOpTimeout    = 15 * time.Second
	checkTimeout    = 5 * time.Minute
)

// linHistory is what the clients did: the operations the model checks (writes,
// compare-and-sets, linearizable reads), the plain reads it does not (readConcern "local",
// which a deposed leader may serve stale), and the failures.
type linHistory struct {
	start   time.Time
	mu      sync.Mutex
	ops     []porcupine.Operation
	plain   []porcupine.Operation
	dropped int            // writes never sent (server selection failed)
	failed  map[string]int // failures by kind
}

// now is the time since the history began, monotonic.
func (h *linHistory) now() int64 { return int64(time.Since(h.start)) }

// add records an operation of w: called at call, returned at ret, answered err.
func (h *linHistory) add(w *linWorker, in regInput, out regOutput, call, ret int64, err error, plain bool) {
	meta := "through " + w.node
	for _, a := range w.attempts {
		meta += "; " + a
	}
	w.attempts = w.attempts[:0]
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.failed[fmt.Sprintf("%c: %s", in.Kind, errKind(err))]++
		switch {
		case in.Kind == 'r':
			return // a read that failed observed nothing
		case neverSent(err):
			h.dropped++
			return
		}
		out, ret = regOutput{Unknown: true}, neverReturned
	}
	op := porcupine.Operation{ClientId: w.id, Input: in, Output: out, Call: call, Return: ret, Metadata: meta}
	if err != nil {
		op.Metadata = meta + "; answered: " + err.Error()
	}
	if plain {
		h.plain = append(h.plain, op)
		return
	}
	h.ops = append(h.ops, op)
}

// neverSent reports whether a failed operation was never sent to a server: the driver found
// none to select (when a retry finds none, it answers the first attempt's error instead).
func neverSent(err error) bool {
	var sse topology.ServerSelectionError
	return errors.As(err, &sse) || errors.Is(err, mongo.ErrClientDisconnected)
}

// errKind names a failure for the test's log: its code name, or its class.
func errKind(err error) string {
	var ce mongo.CommandError
	var we mongo.WriteException
	switch {
	case errors.As(err, &ce) && ce.Name != "":
		return ce.Name
	case errors.As(err, &we) && len(we.WriteErrors) > 0:
		return fmt.Sprintf("write error %d", we.WriteErrors[0].Code)
	case errors.As(err, &we) && we.WriteConcernError != nil:
		return "write concern: " + we.WriteConcernError.Name
	case neverSent(err):
		return "server selection"
	case mongo.IsNetworkError(err):
		return "network"
	case mongo.IsTimeout(err):
		return "timeout"
	}
	return err.Error()
}

// linWorker is one client: its driver client (retryable writes, w: "majority") to one node,
// and the last value it saw of each key, which its compare-and-sets expect.
type linWorker struct {
	id    int
	node  string
	h     *linHistory
	coll  *mongo.Collection // default read concern
	lin   *mongo.Collection // readConcern "linearizable"
	rnd   *rand.Rand
	seen  [linKeys]int64
	count int
	// attempts are the failed attempts of the current operation (the driver's retries),
	// which its record shows.
	attempts []string
}

// monitor records the failed attempts of the worker's operations (one at a time).
func (w *linWorker) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Failed: func(_ context.Context, e *event.CommandFailedEvent) {
		w.attempts = append(w.attempts, fmt.Sprintf("%s failed after %v: %v", e.CommandName, e.Duration.Round(time.Millisecond), e.Failure))
	}}
}

// run does operations until deadline: a third writes, a quarter linearizable reads, a
// sixth plain reads, the rest compare-and-sets.
func (w *linWorker) run(deadline time.Time) {
	for time.Now().Before(deadline) {
		k := w.rnd.IntN(linKeys)
		switch p := w.rnd.IntN(100); {
		case p < 35:
			w.write(k)
		case p < 60:
			w.read(k, w.lin, false)
		case p < 75:
			w.read(k, w.coll, true)
		default:
			w.cas(k)
		}
	}
}

// value returns a value no other operation writes.
func (w *linWorker) value() int64 {
	w.count++
	return int64(w.id+1)<<32 | int64(w.count)
}

// write sets register k to a new value.
func (w *linWorker) write(k int) {
	in := regInput{Kind: 'w', Key: k, Val: w.value()}
	ctx, cancel := context.WithTimeout(context.Background(), linOpTimeout)
	defer cancel()
	call := w.h.now()
	_, err := w.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: k}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: in.Val}}}},
		options.UpdateOne().SetUpsert(true))
	w.h.add(w, in, regOutput{}, call, w.h.now(), err, false)
	if err == nil {
		w.seen[k] = in.Val
	}
}

// read reads register k through coll.
func (w *linWorker) read(k int, coll *mongo.Collection, plain bool) {
	ctx, cancel := context.WithTimeout(context.Background(), linOpTimeout)
	defer cancel()
	var doc struct {
		V int64 `bson:"v"`
	}
	call := w.h.now()
	err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: k}}).Decode(&doc)
	w.h.add(w, regInput{Kind: 'r', Key: k}, regOutput{Val: doc.V}, call, w.h.now(), err, plain)
	if err == nil {
		w.seen[k] = doc.V
	}
}

// cas sets register k to a new value if it holds the last value this client saw.
func (w *linWorker) cas(k int) {
	in := regInput{Kind: 'c', Key: k, Val: w.seen[k], New: w.value()}
	ctx, cancel := context.WithTimeout(context.Background(), linOpTimeout)
	defer cancel()
	call := w.h.now()
	err := w.coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: k}, {Key: "v", Value: in.Val}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: in.New}}}}).Err()
	ret := w.h.now()
	out := regOutput{OK: err == nil}
	if errors.Is(err, mongo.ErrNoDocuments) {
		err = nil // the register held another value: nothing swapped
	}
	w.h.add(w, in, out, call, ret, err, false)
	if out.OK {
		w.seen[k] = in.New
	}
}

// TestReplicationLinearizable: three nodes keep every shard in a group of three replicas;
// six clients, each connected to one node, write registers (documents {_id: k, v: n} of a
// collection sharded on _id, spread over the shards), compare-and-set them
// (findOneAndUpdate on {_id, v}) and read them with readConcern "linearizable" and with the
// default one, while a nemesis cuts a node off from the others' raft messages for a few
// seconds (_cleaveRaftFault on every node) and SIGKILLs a node and restarts it, in turn.
// The writes, compare-and-sets and linearizable reads must form a linearizable history of
// one register per key (porcupine); plain reads, which a deposed leader may serve stale, are
// only counted. A write that failed ambiguously may or may not have taken effect; one that
// was never sent is left out. On a violation the history's visualization is written to a file
// whose path the failure gives. 20 s of workload; CLEAVE_LONG=1 (make linearizability): 3
// minutes.
func TestReplicationLinearizable(t *testing.T) {
	t.Parallel()
	duration := linDuration
	if os.Getenv("CLEAVE_LONG") != "" {
		duration = linLongDuration
	}
	_, nodes := startClusterNodes(t, 3, "--replicas", "3", "--test-commands")
	for _, s := range nodes { // a restarted node listens where its clients connect
		s.args = append(s.args, "--listen", s.addr)
	}
	admin := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		admin[i] = s.client(t)
	}
	waitReplicated(t, admin[0], 3, 3, 30*time.Second)
	coll := setupRegisters(t, nodes[0], admin)

	h := &linHistory{failed: map[string]int{}}
	workers := make([]*linWorker, linWorkers)
	for i := range workers {
		w := &linWorker{id: i, node: nodeName(i % len(nodes)), h: h, rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))}
		c := nodes[i%len(nodes)].client(t, options.Client().SetRetryWrites(true).SetWriteConcern(writeconcern.Majority()).SetMonitor(w.monitor()))
		db := c.Database(dbName(t))
		w.coll = db.Collection(coll)
		w.lin = db.Collection(coll, options.Collection().SetReadConcern(readconcern.Linearizable()))
		workers[i] = w
	}
	h.start = time.Now()
	deadline := h.start.Add(duration)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.run(deadline) })
	}
	n := &nemesis{t: t, nodes: nodes, admin: admin, h: h, rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 99))}
	n.run(deadline)
	wg.Wait()
	reportHistory(t, h, n)
	if dir := checkLinearizable(t, h.ops, n.events); dir != "" {
		for i, s := range nodes { // what the nodes logged, next to the visualization
			_ = os.WriteFile(filepath.Join(dir, nodeName(i)+".log"), []byte(s.log.String()), 0o644)
		}
	}
}

// setupRegisters shards the registers' collection on _id over six chunks (three shards, one
// per node's leader at first) and writes every register's first value, 0, through node s; it
// returns the collection's name.
func setupRegisters(t *testing.T, s *server, clients []*mongo.Client) string {
	t.Helper()
	ctx := context.Background()
	shardColl(t, clients[0], dbName(t)+".regs", "_id", bson.E{Key: "numInitialChunks", Value: 6})
	waitClusterChunks(t, clients, 6, 3)
	regs := majorityClient(t, s).Database(dbName(t)).Collection("regs")
	for k := range linKeys {
		if _, err := regs.InsertOne(ctx, bson.D{{Key: "_id", Value: k}, {Key: "v", Value: int64(0)}}); err != nil {
			t.Fatalf("insert register %d: %v", k, err)
		}
	}
	return "regs"
}

// reportHistory logs what the clients did and what the nemesis did, and how many plain reads
// were stale.
func reportHistory(t *testing.T, h *linHistory, n *nemesis) {
	t.Helper()
	kinds := map[byte]int{}
	unknown := 0
	for _, op := range h.ops {
		kinds[op.Input.(regInput).Kind]++
		if op.Output.(regOutput).Unknown {
			unknown++
		}
	}
	t.Logf("checked %d operations: %d writes, %d compare-and-sets, %d linearizable reads; %d of the writes outcome unknown, %d never sent",
		len(h.ops), kinds['w'], kinds['c'], kinds['r'], unknown, h.dropped)
	stale, impossible := staleReads(h.ops, h.plain)
	t.Logf("plain reads: %d, of which %d were stale (a lower bound) and %d read a value not yet written", len(h.plain), stale, len(impossible))
	for _, s := range impossible {
		t.Errorf("a plain read returned a value no write of its key had begun to write: %s", s)
	}
	var fails []string
	for k, v := range h.failed {
		fails = append(fails, fmt.Sprintf("%s ×%d", k, v))
	}
	sort.Strings(fails)
	t.Logf("failures: %s", strings.Join(fails, "; "))
	for _, e := range n.events {
		t.Logf("nemesis at %v: %s", time.Duration(e.Start).Round(time.Millisecond), e.Description)
	}
	if kinds['r'] == 0 || kinds['w'] == 0 || kinds['c'] == 0 {
		t.Errorf("the workload did not run every kind of operation: %v", kinds)
	}
}
