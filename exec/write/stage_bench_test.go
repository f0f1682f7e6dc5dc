package write_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// BenchmarkStageInsert measures the write path's own work for an insertMany of 100 telemetry
// documents into a collection with mbench's three secondary indexes (readingTime,
// metricValue, deviceId+readingTime): locking, staging each document (its index keys, the
// multikey check, the batch's buffered writes) and releasing, with nothing committed, so
// that Pebble's memtable, WAL and compactions, which exec's BenchmarkInsertMany includes, do
// not blur it. ns/op is per insertMany:
//
//	go test ./exec/write -run '^$' -bench BenchmarkStageInsert -count 6
func BenchmarkStageInsert(b *testing.B) {
	cat := fixture.Stores(b, 1)
	ci := fixture.Create(b, cat, store.Collection{DB: "db", Name: "c", Indexes: []store.Index{
		fixture.Index(b, "readingTime_1", `{"readingTime": 1}`),
		fixture.Index(b, "metricValue_1", `{"metricValue": 1}`),
		fixture.Index(b, "deviceId_1_readingTime_1", `{"deviceId": 1, "readingTime": 1}`),
	}})
	p := write.NewPath(cat, query.New(cat, query.Options{}), nil)
	docs := make([]bsoncore.Document, 100)
	pad := make([]byte, 900)
	for i := range pad {
		pad[i] = 'a' + byte(i*7%26)
	}
	for i := range docs {
		docs[i] = bsoncore.NewDocumentBuilder().AppendObjectID("_id", bson.NewObjectID()).
			AppendString("deviceId", fmt.Sprintf("dev-%04d", i)).AppendString("metricType", "temperature").
			AppendDouble("metricValue", float64(i)*0.37).AppendString("unit", "C").
			AppendDateTime("readingTime", int64(i)*1000).AppendString("padding", string(pad)).Build()
	}
	ids := make([][]byte, len(docs))
	for i, d := range docs {
		_, ids[i] = catalog.DocID(d, nil)
	}
	writes := make([]write.DocWrite, len(docs))
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for b.Loop() {
		wr := p.NewWriter(ci)
		var hashes []uint64
		for i, d := range docs {
			writes[i] = write.DocWrite{ID: ids[i], New: d}
			hashes = wr.LockHashes(hashes, &writes[i])
		}
		wr.Lock(hashes)
		for i := range writes {
			if err := wr.Stage(&writes[i]); err != nil {
				b.Fatal(err)
			}
		}
		wr.Release()
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// processCPU returns the CPU time (user and system) the process has used so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
