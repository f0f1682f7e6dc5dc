package exec

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
)

// BenchmarkInsertMany is mbench's insert workload in process: insertMany of 100 telemetry
// documents of 1 KiB shaped as mbench's (ObjectID _id, deviceId, metricType, a uniform
// metricValue, unit, readingTime, incompressible padding), unordered and synced, into a
// collection with the harness's three secondary indexes (readingTime, metricValue,
// deviceId+readingTime), from 1, 8 and 32 goroutines (one connection each). ns/op is per
// insertMany; docs/s is the throughput, which a shared machine's other processes lower;
// cpu-ns/doc (the process's CPU per document, the in-process counterpart of mbench's server
// CPU per op) and allocs/doc are what a change to the write path should lower. Compare with
// benchstat:
//
//	go test ./exec -run '^$' -bench 'BenchmarkInsertMany$/^Goroutines(8|32)$' -benchtime 2000x -count 5
//
// The Shards2 cases run on two shards with the collection sharded on hashed deviceId, as
// mbench's "2 shards" column (load -shard hashed:deviceId); Sharded/Goroutines8 shards it
// so on one shard, which tells what a sharded collection costs from what a second shard does. The documents are built before
// the timer where they can be (a template whose _id and readingTime each insertMany patches),
// so that the client's share of the CPU stays small.
//
// The Retryable cases send each insertMany as a retryable write, as the drivers (and mbench)
// do by default: a session per goroutine and a new txnNumber per insertMany, whose
// statements the server records with the writes.
func BenchmarkInsertMany(b *testing.B) {
	for _, shards := range []int{1, 2} {
		for _, goroutines := range []int{1, 8, 32} {
			name := fmt.Sprintf("Goroutines%d", goroutines)
			if shards > 1 {
				name = fmt.Sprintf("Shards%d/%s", shards, name)
			}
			b.Run(name, func(b *testing.B) { benchInsertMany(b, shards, goroutines, false, shards > 1) })
		}
		name := "Retryable/Goroutines8"
		if shards > 1 {
			name = fmt.Sprintf("Shards%d/%s", shards, name)
		}
		b.Run(name, func(b *testing.B) { benchInsertMany(b, shards, 8, true, shards > 1) })
	}
	b.Run("Sharded/Goroutines8", func(b *testing.B) { benchInsertMany(b, 1, 8, false, true) })
}

// benchInsertMany runs BenchmarkInsertMany's case of shards and goroutines, with retryable
// writes if retryable, into a collection sharded on hashed deviceId if sharded.
func benchInsertMany(b *testing.B, shards, goroutines int, retryable, sharded bool) {
	e := testExecutor(b, shards, Options{})
	setup := e.Connect(wire.ConnInfo{ID: 1})
	if sharded {
		shardBench(b, setup, "deviceId", 4)
	}
	run(b, setup, bsoncore.NewDocumentBuilder().AppendString("createIndexes", "c").
		AppendArray("indexes", bsoncore.NewArrayBuilder().
			AppendDocument(indexSpec("readingTime_1", bsoncore.NewDocumentBuilder().AppendInt32("readingTime", 1).Build())).
			AppendDocument(indexSpec("metricValue_1", bsoncore.NewDocumentBuilder().AppendInt32("metricValue", 1).Build())).
			AppendDocument(indexSpec("deviceId_1_readingTime_1", bsoncore.NewDocumentBuilder().
				AppendInt32("deviceId", 1).AppendInt32("readingTime", 1).Build())).Build()).
		AppendString("$db", "bench").Build())
	tmpl := newInsertTemplate(0)
	var seq atomic.Int64
	var conns atomic.Uint64
	b.ReportAllocs()
	b.SetParallelism((goroutines + 1) / 2) // GOMAXPROCS is 2 here
	if goroutines == 1 {
		b.SetParallelism(1)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		n := conns.Add(1)
		c := e.Connect(wire.ConnInfo{ID: int64(n + 1)})
		t := tmpl
		if retryable {
			var lsid [16]byte
			binary.BigEndian.PutUint64(lsid[8:], n)
			t = tmpl.withSession(lsid)
		}
		for pb.Next() {
			run(b, c, t.body(seq.Add(insertBatch)-insertBatch))
		}
	})
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	runtime.ReadMemStats(&ms1)
	docs := float64(b.N * insertBatch)
	b.ReportMetric(docs/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/docs, "cpu-ns/doc")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/docs, "allocs/doc")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/docs, "B/doc")
}

// indexSpec is a createIndexes entry.
func indexSpec(name string, key bsoncore.Document) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendDocument("key", key).AppendString("name", name).Build()
}

// insertBatch is the documents of one insertMany of mbench's insert workload.
const insertBatch = 100

// benchDocSize is the BSON size of BenchmarkInsertMany's documents (mbench's -docsize).
const benchDocSize = 1024

// insertTemplate is an insert command of insertBatch telemetry documents, with the offsets
// of each document's _id and readingTime, which body patches.
type insertTemplate struct {
	raw      bsoncore.Document
	ids, tss []int
	// txn is the offset of the txnNumber of a retryable write's template (withSession), 0
	// when it has none; lastTxn is the txnNumber body gave last.
	txn     int
	lastTxn int64
}

// benchMetrics are mbench's metric types and units.
var benchMetrics = [][2]string{{"temperature", "C"}, {"humidity", "%"}, {"pressure", "hPa"}, {"co2", "ppm"}, {"battery", "V"}}

// newInsertTemplate builds an insertTemplate whose metrics and padding come from seed.
func newInsertTemplate(seed uint64) *insertTemplate {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(seed, seed))
	t := &insertTemplate{}
	cidx, raw := bsoncore.AppendDocumentStart(nil)
	raw = bsoncore.AppendStringElement(raw, "insert", "c")
	aidx, raw := bsoncore.AppendArrayElementStart(raw, "documents")
	for i := range insertBatch {
		m := benchMetrics[r.IntN(len(benchMetrics))]
		didx, out := bsoncore.AppendDocumentElementStart(raw, strconv.Itoa(i))
		t.ids = append(t.ids, len(out)+len("\x07_id\x00"))
		out = bsoncore.AppendObjectIDElement(out, "_id", bson.NewObjectID())
		out = bsoncore.AppendStringElement(out, "deviceId", fmt.Sprintf("dev-%04d", i))
		out = bsoncore.AppendStringElement(out, "metricType", m[0])
		out = bsoncore.AppendDoubleElement(out, "metricValue", r.Float64()*100)
		out = bsoncore.AppendStringElement(out, "unit", m[1])
		t.tss = append(t.tss, len(out)+len("\x09readingTime\x00"))
		out = bsoncore.AppendDateTimeElement(out, "readingTime", 0)
		// The padding's element (type, name, length, NUL) and the document's final NUL.
		pad := make([]byte, max(benchDocSize-(len(out)-int(didx))-len("\x02padding\x00")-4-1-1, 0))
		for j := range pad {
			pad[j] = letters[r.IntN(len(letters))]
		}
		out = bsoncore.AppendStringElement(out, "padding", string(pad))
		raw, _ = bsoncore.AppendDocumentEnd(out, didx)
	}
	raw, _ = bsoncore.AppendArrayEnd(raw, aidx)
	raw = bsoncore.AppendBooleanElement(raw, "ordered", false)
	raw = bsoncore.AppendStringElement(raw, "$db", "bench")
	t.raw, _ = bsoncore.AppendDocumentEnd(raw, cidx)
	return t
}

// body returns a copy of the template for the documents numbered first..first+insertBatch-1:
// new ObjectIDs, deviceId and metrics as the template's, and readingTime first+i seconds
// after 2026-01-01 (mbench's readingTime of record first+i); a retryable write's template
// gives it the next txnNumber (body is then not safe for concurrent use).
func (t *insertTemplate) body(first int64) bsoncore.Document {
	out := append(bsoncore.Document(nil), t.raw...)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := range t.ids {
		id := bson.NewObjectID()
		copy(out[t.ids[i]:], id[:])
		binary.LittleEndian.PutUint64(out[t.tss[i]:], uint64(t0+(first+int64(i))*1000))
	}
	if t.txn > 0 {
		t.lastTxn++
		binary.LittleEndian.PutUint64(out[t.txn:], uint64(t.lastTxn))
	}
	return out
}

// withSession returns a copy of t whose commands are retryable writes of session lsid:
// body gives each the next txnNumber, as a driver does.
func (t *insertTemplate) withSession(lsid [16]byte) *insertTemplate {
	out := append(bsoncore.Document(nil), t.raw[:len(t.raw)-1]...)
	sidx, out := bsoncore.AppendDocumentElementStart(out, "lsid")
	out = bsoncore.AppendBinaryElement(out, "id", bson.TypeBinaryUUID, lsid[:])
	out, _ = bsoncore.AppendDocumentEnd(out, sidx)
	txn := len(out) + len("\x12txnNumber\x00")
	out = bsoncore.AppendInt64Element(out, "txnNumber", 0)
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return &insertTemplate{raw: out, ids: t.ids, tss: t.tss, txn: txn}
}

// insertManyBody is an insert of insertBatch telemetry documents numbered from first.
func insertManyBody(first int64) bsoncore.Document {
	return newInsertTemplate(uint64(first)).body(first)
}

// workloadABodies returns 1,024 YCSB workload A commands on bench.c: finds by _id and $set
// updates by _id, alternating, over benchIDs; synced false adds writeConcern {j: false}.
func workloadABodies(synced bool) []bsoncore.Document {
	bodies := make([]bsoncore.Document, 1024)
	wc := bsoncore.NewDocumentBuilder().AppendBoolean("j", false).Build()
	for i := range bodies {
		id := bsoncore.NewDocumentBuilder().AppendInt64("_id", benchIDs[i]).Build()
		if i%2 == 0 {
			bodies[i] = bsoncore.NewDocumentBuilder().AppendString("find", "c").AppendDocument("filter", id).
				AppendInt32("limit", 1).AppendBoolean("singleBatch", true).AppendString("$db", "bench").Build()
			continue
		}
		upd := bsoncore.NewDocumentBuilder().AppendDocument("q", id).
			AppendDocument("u", bsoncore.NewDocumentBuilder().AppendDocument("$set",
				bsoncore.NewDocumentBuilder().AppendDouble("metricValue", float64(i)).Build()).Build()).Build()
		b := bsoncore.NewDocumentBuilder().AppendString("update", "c").
			AppendArray("updates", bsoncore.NewArrayBuilder().AppendDocument(upd).Build())
		if !synced {
			b.AppendDocument("writeConcern", wc)
		}
		bodies[i] = b.AppendString("$db", "bench").Build()
	}
	return bodies
}

// TestInsertTemplateBody checks BenchmarkInsertMany's documents: benchDocSize bytes each,
// valid BSON, and the _id and readingTime that body patched in.
func TestInsertTemplateBody(t *testing.T) {
	tmpl := newInsertTemplate(1)
	body := tmpl.body(500)
	if err := body.Validate(); err != nil {
		t.Fatal(err)
	}
	vals, err := body.Lookup("documents").Array().Values()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	seen := map[bson.ObjectID]bool{}
	for i, v := range vals {
		doc := v.Document()
		if len(doc) != benchDocSize {
			t.Errorf("document %d has %d bytes, want %d", i, len(doc), benchDocSize)
		}
		if got, want := doc.Lookup("readingTime").DateTime(), t0+int64(500+i)*1000; got != want {
			t.Errorf("document %d: readingTime %d, want %d", i, got, want)
		}
		id := bson.ObjectID(doc.Lookup("_id").ObjectID())
		if seen[id] || id.IsZero() {
			t.Errorf("document %d: _id %v repeats or is zero", i, id)
		}
		seen[id] = true
	}
	if len(vals) != insertBatch {
		t.Fatalf("%d documents, want %d", len(vals), insertBatch)
	}
}
