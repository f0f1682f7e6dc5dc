package changes

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// BenchmarkAppendRecordInsert measures the change record of the insert of an mbench-like
// telemetry document of about 1 KB (what every insert adds to its batch with the change log
// on), to set against the write path's own cost per document (exec/write's
// BenchmarkStageInsert is per 100 documents):
//
//	go test ./exec/changes -run '^$' -bench AppendRecordInsert -count 6
func BenchmarkAppendRecordInsert(b *testing.B) {
	ci := &catalog.Coll{Meta: &store.Collection{DB: "db", Name: "c"}}
	doc := bsoncore.NewDocumentBuilder().AppendInt64("_id", 42).
		AppendString("deviceId", "dev-0042").AppendString("metricType", "temperature").
		AppendDouble("metricValue", 15.54).AppendString("unit", "C").
		AppendDateTime("readingTime", 42000).AppendString("padding", strings.Repeat("abcdefg", 130)).Build()
	_, id := catalog.DocID(doc, nil)
	w := &Write{ID: id, New: doc, Wall: 1}
	var buf []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		buf = AppendRecord(buf[:0], ci, w)
	}
}

// BenchmarkAppendRecordUpdate measures the change record of workload A's update: a $set of
// metricValue in the document of BenchmarkAppendRecordInsert, whose updateDescription Diff
// computes from the old and the new document:
//
//	go test ./exec/changes -run '^$' -bench AppendRecordUpdate -count 6
func BenchmarkAppendRecordUpdate(b *testing.B) {
	ci := &catalog.Coll{Meta: &store.Collection{DB: "db", Name: "c"}}
	build := func(v float64) bsoncore.Document {
		return bsoncore.NewDocumentBuilder().AppendInt64("_id", 42).
			AppendString("deviceId", "dev-0042").AppendString("metricType", "temperature").
			AppendDouble("metricValue", v).AppendString("unit", "C").
			AppendDateTime("readingTime", 42000).AppendString("padding", strings.Repeat("abcdefg", 130)).Build()
	}
	old, cur := build(15.54), build(16.5)
	_, id := catalog.DocID(cur, nil)
	w := &Write{ID: id, Old: old, New: cur, Wall: 1}
	var buf []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(cur)))
	for b.Loop() {
		buf = AppendRecord(buf[:0], ci, w)
	}
}
