package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
)

// BenchmarkUpdateByID measures the update side of YCSB workload A alone through the whole
// command path: a $set of metricValue by _id, one at a time, on a collection of 10,000
// documents with the three secondary indexes of mbench's collection (readingTime,
// metricValue, deviceId+readingTime), synced (the default write concern) and unsynced
// (j: false, where the server's own CPU shows). cpu-ns/op is the process's CPU per update.
//
//	go test ./exec -run '^$' -bench 'BenchmarkUpdateByID' -count 5
func BenchmarkUpdateByID(b *testing.B) {
	for _, synced := range []bool{true, false} {
		b.Run(fmt.Sprintf("synced=%v", synced), func(b *testing.B) {
			runUpdates(b, updateBenchSetup(b), updateBodies(synced, nil))
		})
	}
	// retryable: as drivers send a single-statement update by default (retryWrites), with
	// the session's lsid and a txnNumber one higher each time; unsynced.
	b.Run("retryable", func(b *testing.B) {
		runUpdates(b, updateBenchSetup(b), updateBodies(false, make([]byte, 16)))
	})
}

// updateBody is an update command of BenchmarkUpdateByID and the offsets of the values
// runUpdates patches: the $set's metricValue (a double) and the txnNumber (an int64; 0:
// none).
type updateBody struct {
	body          bsoncore.Document
	value, txnNum int
}

// updateBodies returns the updates of workloadABodies; with a session id (16 bytes), retryable
// with that lsid and a txnNumber.
func updateBodies(synced bool, session []byte) []updateBody {
	retryable := session != nil
	lsid := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, session).Build()
	var out []updateBody
	for i, body := range workloadABodies(synced) {
		if i%2 == 0 {
			continue // a find
		}
		u := updateBody{value: bytes.Index(body, []byte("metricValue\x00")) + len("metricValue\x00")}
		if retryable {
			body = append(body[:len(body)-1:len(body)-1], bsoncore.AppendDocumentElement(nil, "lsid", lsid)...)
			body = bsoncore.AppendInt64Element(body, "txnNumber", 0)
			body = append(body, 0)
			bsoncore.UpdateLength(body, 0, int32(len(body)))
			u.txnNum = len(body) - 9
		}
		u.body = body
		out = append(out, u)
	}
	return out
}

// patch sets u's $set value to value and, when u is retryable, its txnNumber to txn. It
// writes into u's body: concurrent callers use bodies of their own.
func (u updateBody) patch(value float64, txn int64) bsoncore.Document {
	binary.LittleEndian.PutUint64(u.body[u.value:], math.Float64bits(value))
	if u.txnNum > 0 {
		binary.LittleEndian.PutUint64(u.body[u.txnNum:], uint64(txn))
	}
	return u.body
}

// runUpdates runs bodies in turn, each setting metricValue to a value the document never
// held (so that every update changes its document, as YCSB's random values do) and, when
// retryable, with the next txnNumber; it reports cpu-ns/op as runBodies does.
func runUpdates(b *testing.B, c wire.ConnHandler, bodies []updateBody) {
	b.ReportAllocs()
	i := 0
	cpu0 := processCPU(b)
	for b.Loop() {
		if n, _ := run(b, c, bodies[i%len(bodies)].patch(float64(1_000_000+i), int64(i+1))).Lookup("nModified").AsInt64OK(); n != 1 {
			b.Fatalf("update %d modified %d documents", i, n)
		}
		i++
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// updateBenchSetup returns a connection to an executor whose bench.c holds 10,000
// telemetry documents (loadTelemetry) and the three secondary indexes of mbench's collection.
func updateBenchSetup(b *testing.B) wire.ConnHandler {
	return updateBenchExecutor(b, store.Options{}).Connect(wire.ConnInfo{ID: 1})
}

// updateBenchExecutor returns an executor set up as updateBenchSetup describes, its store
// opened with so.
func updateBenchExecutor(b *testing.B, so store.Options) *Executor {
	e := testExecutorStore(b, 1, Options{}, so)
	c := e.Connect(wire.ConnInfo{ID: 1})
	key := func(fields ...string) bsoncore.Document {
		kb := bsoncore.NewDocumentBuilder()
		for _, f := range fields {
			kb.AppendInt32(f, 1)
		}
		return kb.Build()
	}
	run(b, c, bsoncore.NewDocumentBuilder().AppendString("createIndexes", "c").
		AppendArray("indexes", bsoncore.NewArrayBuilder().
			AppendDocument(indexSpec("readingTime_1", key("readingTime"))).
			AppendDocument(indexSpec("metricValue_1", key("metricValue"))).
			AppendDocument(indexSpec("deviceId_1_readingTime_1", key("deviceId", "readingTime"))).Build()).
		AppendString("$db", "bench").Build())
	loadTelemetry(b, c, 10_000)
	return e
}

// loadTelemetry inserts n documents of about 1 KB into bench.c, with int64 _ids, and the
// deviceId, readingTime and metricValue of mbench's documents.
func loadTelemetry(tb testing.TB, c wire.ConnHandler, n int) {
	const t0 = 1_767_225_600_000 // 2026-01-01 in Unix milliseconds
	for start := 0; start < n; start += 1000 {
		arr := bsoncore.NewArrayBuilder()
		for i := start; i < min(start+1000, n); i++ {
			arr.AppendDocument(bsoncore.NewDocumentBuilder().
				AppendInt64("_id", int64(i)).
				AppendString("deviceId", fmt.Sprintf("dev-%04d", i%1000)).
				AppendDateTime("readingTime", t0+int64(i)*1000).
				AppendDouble("metricValue", float64(i%100)).
				AppendString("padding", string(make([]byte, 900))).Build())
		}
		run(tb, c, bsoncore.NewDocumentBuilder().AppendString("insert", "c").
			AppendArray("documents", arr.Build()).AppendString("$db", "bench").Build())
	}
}
