package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
)

// benchExecutor returns an executor over a fresh store in a temporary directory.
func benchExecutor(tb testing.TB) *Executor {
	tb.Helper()
	return testExecutor(tb, 1, Options{})
}

// run sends one command through the connection handler and fails on {ok: 0}.
func run(tb testing.TB, c wire.ConnHandler, body bsoncore.Document) bsoncore.Document {
	reply, err := c.Handle(context.Background(), &wire.Request{Body: body})
	if err != nil {
		tb.Fatal(err)
	}
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
		tb.Fatalf("command failed: %v", reply)
	}
	return reply
}

// loadDocs inserts n telemetry-like documents with int64 _ids into db.c.
func loadDocs(tb testing.TB, c wire.ConnHandler, n int) {
	for start := 0; start < n; start += 1000 {
		b := bsoncore.NewDocumentBuilder().AppendString("insert", "c").AppendString("$db", "bench")
		arr := bsoncore.NewArrayBuilder()
		for i := start; i < min(start+1000, n); i++ {
			arr.AppendDocument(bsoncore.NewDocumentBuilder().
				AppendInt64("_id", int64(i)).
				AppendString("deviceId", fmt.Sprintf("dev-%04d", i%1000)).
				AppendDouble("metricValue", float64(i%100)).
				AppendString("padding", string(make([]byte, 900))).Build())
		}
		b.AppendArray("documents", arr.Build())
		run(tb, c, b.Build())
	}
}

// benchIDs are the _ids the point-read benchmarks read, in a fixed random order (as YCSB's
// keys come): a stride over the key space would favour an unsharded collection, whose keys
// are in _id order, over a sharded one, whose keys are in hash order.
var benchIDs = func() []int64 {
	r := rand.New(rand.NewPCG(1, 2))
	ids := make([]int64, 1024)
	for i := range ids {
		ids[i] = r.Int64N(10_000)
	}
	return ids
}()

// BenchmarkFindByID measures a point read through the whole command path (dispatch, plan,
// read, reply), the server's share of YCSB workload C.
func BenchmarkFindByID(b *testing.B) {
	e := benchExecutor(b)
	c := e.Connect(wire.ConnInfo{ID: 1})
	loadDocs(b, c, 10_000)
	runBodies(b, c, findByIDBodies())
}

// findByIDBodies returns 1,024 finds of one document by _id on bench.c, over benchIDs, as
// mbench's workload c sends them.
func findByIDBodies() []bsoncore.Document {
	bodies := make([]bsoncore.Document, 1024)
	for i := range bodies {
		bodies[i] = bsoncore.NewDocumentBuilder().AppendString("find", "c").
			AppendDocument("filter", bsoncore.NewDocumentBuilder().AppendInt64("_id", benchIDs[i]).Build()).
			AppendInt32("limit", 1).AppendBoolean("singleBatch", true).AppendString("$db", "bench").Build()
	}
	return bodies
}

// BenchmarkInsertOne measures single-document inserts, synced, one at a time.
func BenchmarkInsertOne(b *testing.B) {
	e := benchExecutor(b)
	c := e.Connect(wire.ConnInfo{ID: 1})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		body := bsoncore.NewDocumentBuilder().AppendString("insert", "c").AppendString("$db", "bench").
			AppendArray("documents", bsoncore.NewArrayBuilder().AppendDocument(
				bsoncore.NewDocumentBuilder().AppendInt64("_id", int64(i)).AppendString("v", "x").Build()).Build()).Build()
		run(b, c, body)
		i++
	}
}

// runBodies runs bodies in turn for the benchmark's iterations and reports, besides the
// elapsed time, the process's CPU per operation (cpu-ns/op: what other processes on a
// shared machine do not inflate, the in-process counterpart of mbench's server CPU per op).
func runBodies(b *testing.B, c wire.ConnHandler, bodies []bsoncore.Document) {
	b.ReportAllocs()
	i := 0
	cpu0 := processCPU(b)
	for b.Loop() {
		run(b, c, bodies[i%len(bodies)])
		i++
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
