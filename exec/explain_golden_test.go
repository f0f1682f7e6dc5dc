package exec

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
)

// updateGolden rewrites the golden files of the explain tests: go test -run Explain -update.
var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// explainCases are the queries whose plans are kept in testdata/explain, one file each: the
// access path, the shards and partitions read, the keys and documents examined and the
// documents returned are a query's contract as much as its results (Vitess keeps its plans
// in planbuilder/testdata the same way). "u" is unsharded, "s" sharded on hashed k over two
// shards; both hold 200 documents {_id: i, k: i%20, a: i%50, b: i%7, c: i, n: "n<i, 3 digits>",
// t: [i%10, i%10+1]} and indexes a, b+c, n and t (multikey).
var explainCases = []struct{ name, cmd string }{
	{"id-point", `{"find": "u", "filter": {"_id": 7}}`},
	{"id-in", `{"find": "u", "filter": {"_id": {"$in": [3, 4, 500]}}}`},
	{"collscan", `{"find": "u", "filter": {"c": {"$gt": 190}}}`},
	{"index-eq", `{"find": "u", "filter": {"a": 3}}`},
	{"index-range-one-sided", `{"find": "u", "filter": {"a": {"$gte": 45}}}`},
	{"index-range-two-sided", `{"find": "u", "filter": {"a": {"$gte": 10, "$lt": 12}}}`},
	{"index-prefix-sort", `{"find": "u", "filter": {"b": 2}, "sort": {"c": -1}, "limit": 3}`},
	{"index-in", `{"find": "u", "filter": {"a": {"$in": [1, 2]}}}`},
	{"index-compound-prefix-range", `{"find": "u", "filter": {"b": 2, "c": {"$gte": 10, "$lt": 60}}}`},
	// A range on b, then bounds on c: c is checked on each key of the range before its
	// document is read (keys examined: the range's; documents: the matches).
	{"index-range-then-range", `{"find": "u", "filter": {"b": {"$gte": 2, "$lt": 4}, "c": {"$lt": 50}}}`},
	{"index-in-range", `{"find": "u", "filter": {"b": {"$in": [1, 2]}, "c": {"$gte": 10, "$lt": 60}}}`},
	{"index-range-desc-sort", `{"find": "u", "filter": {"a": {"$gt": 10, "$lte": 12}}, "sort": {"a": -1}}`},
	// An $or whose branches all bound a: one scan of the union of their ranges (MongoDB's
	// plan is an OR of two IXSCANs).
	{"index-or-ranges", `{"find": "u", "filter": {"$or": [{"a": {"$gte": 1, "$lt": 2}}, {"a": {"$gte": 40, "$lt": 41}}]}}`},
	// An $or whose branches bound different indexes: one scan each, every document read
	// once (MongoDB's OR of IXSCANs): 4 keys for a = 2, 7 for b = 2 and c < 50, 10 documents
	// (_id 2 is in both).
	{"index-or-fields", `{"find": "u", "filter": {"$or": [{"a": 2}, {"b": 2, "c": {"$lt": 50}}]}}`},
	// A branch that bounds no index: the union is the collection.
	{"or-unindexed-branch", `{"find": "u", "filter": {"$or": [{"a": 2}, {"k": 3}]}}`},
	{"sharded-or-fields", `{"find": "s", "filter": {"$or": [{"a": 2}, {"b": 2, "c": {"$lt": 50}}]}, "sort": {"c": 1}}`},
	{"hint", `{"find": "u", "filter": {"c": 5}, "hint": {"a": 1}}`},
	{"sort-no-index", `{"find": "u", "filter": {}, "sort": {"c": -1}, "limit": 2}`},
	{"eof", `{"find": "u", "filter": {"a": {"$in": []}}}`},
	{"sharded-targeted", `{"find": "s", "filter": {"k": 4}}`},
	{"sharded-id", `{"find": "s", "filter": {"_id": 7}}`},
	{"sharded-merge-sort", `{"find": "s", "filter": {"a": {"$lt": 3}}, "sort": {"a": 1}}`},
	{"sharded-range-two-sided", `{"find": "s", "filter": {"a": {"$gte": 10, "$lt": 12}}}`},
	{"sharded-scan", `{"find": "s", "filter": {"c": {"$lt": 10}}}`},
	// A count whose bounds hold only matches counts index keys and reads no document
	// (MongoDB's COUNT_SCAN; a covered IXSCAN when a key check tests a further field or
	// there are several ranges); one whose filter the keys cannot answer reads documents.
	{"count-index", `{"count": "u", "query": {"a": 3}}`},
	// A count of the whole collection reads its counters, not its documents.
	{"count-fast", `{"count": "u"}`},
	{"sharded-count-fast", `{"count": "s", "skip": 150, "limit": 20}`},
	{"count-compound-range", `{"count": "u", "query": {"b": 2, "c": {"$gte": 10, "$lt": 60}}}`},
	{"count-range-then-range", `{"count": "u", "query": {"b": {"$gte": 2, "$lt": 4}, "c": {"$lt": 50}}}`},
	{"count-in", `{"count": "u", "query": {"a": {"$in": [1, 2]}}}`},
	{"count-unindexed-field", `{"count": "u", "query": {"a": 3, "c": {"$lt": 100}}}`},
	{"count-multikey", `{"count": "u", "query": {"t": 3}}`},
	// An $or alone whose branches' bounds hold only matches counts their keys (OR of IXSCANs
	// without FETCH); with another condition beside it, it reads documents.
	{"count-or", `{"count": "u", "query": {"$or": [{"a": {"$lt": 3}}, {"b": 2, "c": {"$gte": 50}}]}}`},
	{"count-or-and", `{"count": "u", "query": {"$or": [{"a": {"$lt": 3}}, {"b": 2}], "c": {"$gte": 50}}}`},
	{"sharded-count-range", `{"count": "s", "query": {"a": {"$gte": 10, "$lt": 12}}}`},
	{"distinct", `{"distinct": "u", "key": "b", "query": {"a": {"$lt": 2}}}`},
	// distinct on an index's first field, whose bounds answer the filter: one key and one
	// document per value, the scan seeking past the others (MongoDB's DISTINCT_SCAN).
	{"distinct-scan", `{"distinct": "u", "key": "b"}`},
	{"distinct-scan-range", `{"distinct": "u", "key": "a", "query": {"a": {"$gte": 10, "$lt": 20}}}`},
	// The fields before the key fixed by equality or $in: one entry per value of c within
	// each b (the $in reads two ranges); a $group by c sorted on it reads them backwards.
	{"distinct-scan-prefix-eq", `{"distinct": "u", "key": "c", "query": {"b": 3}}`},
	{"distinct-scan-prefix-in", `{"distinct": "u", "key": "c", "query": {"b": {"$in": [3, 4]}}}`},
	{"agg-sort-group-first-prefix-eq", `{"aggregate": "u", "pipeline": [{"$match": {"b": 3}}, {"$sort": {"c": -1}}, {"$group": {"_id": "$c", "n": {"$first": "$n"}}}], "cursor": {}}`},
	{"distinct-scan-key-check", `{"distinct": "u", "key": "b", "query": {"b": {"$gte": 3}, "c": {"$lt": 20}}}`},
	{"distinct-multikey", `{"distinct": "u", "key": "t", "query": {"t": {"$lt": 3}}}`},
	{"sharded-distinct-scan", `{"distinct": "s", "key": "a"}`},
	// The largest c of each b: b_1_c_1 read in reverse, its first entry of each b.
	{"agg-sort-group-first", `{"aggregate": "u", "pipeline": [{"$sort": {"b": -1, "c": -1}}, {"$group": {"_id": "$b", "c": {"$first": "$c"}}}], "cursor": {}}`},
	{"sharded-sort-group-first", `{"aggregate": "s", "pipeline": [{"$match": {"b": {"$lt": 4}}}, {"$sort": {"b": 1, "c": 1}}, {"$group": {"_id": "$b", "c": {"$first": "$c"}, "k": {"$first": "$k"}}}], "cursor": {}}`},
	// $last after a sort on the group's field: the index read the other way, $first of each
	// value (MongoDB's reverse DISTINCT_SCAN, SERVER-37304); without an index, as written.
	{"agg-sort-group-last", `{"aggregate": "u", "pipeline": [{"$sort": {"b": 1, "c": 1}}, {"$group": {"_id": "$b", "c": {"$last": "$c"}}}], "cursor": {}}`},
	{"sharded-sort-group-last", `{"aggregate": "s", "pipeline": [{"$match": {"b": {"$lt": 4}}}, {"$sort": {"b": -1, "c": -1}}, {"$group": {"_id": "$b", "c": {"$last": "$c"}, "k": {"$last": "$k"}}}], "cursor": {}}`},
	// A sort without the group's field: sorted on it first, then as asked, the same
	// document of each value is first.
	{"agg-sort-time-group-first", `{"aggregate": "u", "pipeline": [{"$sort": {"c": -1}}, {"$group": {"_id": "$b", "c": {"$first": "$c"}}}], "cursor": {}}`},
	{"agg-sort-group-last-unindexed", `{"aggregate": "u", "pipeline": [{"$sort": {"c": 1}}, {"$group": {"_id": "$c", "b": {"$last": "$b"}}}], "cursor": {}}`},
	// $top and $bottom with no sort: the query sorts on the group's field, then on their
	// order, when an index serves that as a distinct scan (MongoDB 8.0's DISTINCT_SCAN).
	{"agg-group-top", `{"aggregate": "u", "pipeline": [{"$group": {"_id": "$b", "c": {"$top": {"sortBy": {"c": -1}, "output": "$c"}}}}], "cursor": {}}`},
	{"sharded-group-bottom", `{"aggregate": "s", "pipeline": [{"$match": {"b": {"$lt": 4}}}, {"$group": {"_id": "$b", "c": {"$bottom": {"sortBy": {"b": 1, "c": 1}, "output": "$c"}}}}], "cursor": {}}`},
	{"agg-group-top-unindexed", `{"aggregate": "u", "pipeline": [{"$group": {"_id": "$b", "n": {"$top": {"sortBy": {"n": 1}, "output": "$n"}}}}], "cursor": {}}`},
	{"agg-group-distinct-scan", `{"aggregate": "s", "pipeline": [{"$match": {"a": {"$lt": 5}}}, {"$group": {"_id": "$a"}}], "cursor": {}}`},
	{"agg-group-split", `{"aggregate": "s", "pipeline": [{"$match": {"c": {"$gte": 100}}}, {"$group": {"_id": "$b", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}], "cursor": {}}`},
	// A regex with a literal prefix reads the strings that start with it (MongoDB's simple
	// regex bounds); an unanchored one cannot, and scans.
	{"index-regex-prefix", `{"find": "u", "filter": {"n": {"$regex": "^n01"}}}`},
	{"regex-unanchored", `{"find": "u", "filter": {"n": {"$regex": "01"}}}`},
	// $elemMatch on values: its operators apply to one element, so their bounds intersect on
	// a multikey index ({t: {$gte: 3, $lt: 4}} could not).
	{"index-elemmatch-range", `{"find": "u", "filter": {"t": {"$elemMatch": {"$gte": 3, "$lt": 4}}}}`},
	// countDocuments' pipeline: the $group reads no field, so the shards count index keys.
	{"agg-count-documents", `{"aggregate": "s", "pipeline": [{"$match": {"a": {"$gte": 10, "$lt": 12}}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}], "cursor": {}}`},
	{"agg-single-shard", `{"aggregate": "s", "pipeline": [{"$match": {"k": 3}}, {"$project": {"c": 1}}], "cursor": {}}`},
}

func TestExplainGolden(t *testing.T) {
	e := testExecutor(t, 2, Options{PartitionCheckInterval: time.Hour})
	c := e.Connect(wire.ConnInfo{ID: 1})
	cmd := func(json string) bsoncore.Document {
		return run(t, c, withDB(streamtest.ExtDoc(t, json), "golden"))
	}
	run(t, c, withDB(streamtest.ExtDoc(t, `{"shardCollection": "golden.s", "key": {"k": "hashed"}, "numInitialChunks": 4}`), "admin"))
	for _, coll := range []string{"u", "s"} {
		docs := make([]string, 200)
		for i := range docs {
			docs[i] = fmt.Sprintf(`{"_id": %d, "k": %d, "a": %d, "b": %d, "c": %d, "n": "n%03d", "t": [%d, %d]}`,
				i, i%20, i%50, i%7, i, i, i%10, i%10+1)
		}
		cmd(`{"insert": "` + coll + `", "documents": [` + join(docs) + `]}`)
		cmd(`{"createIndexes": "` + coll + `", "indexes": [{"key": {"a": 1}, "name": "a_1"}, {"key": {"b": 1, "c": 1}, "name": "b_1_c_1"}, ` +
			`{"key": {"n": 1}, "name": "n_1"}, {"key": {"t": 1}, "name": "t_1"}]}`)
	}
	for _, tc := range explainCases {
		t.Run(tc.name, func(t *testing.T) {
			reply := cmd(`{"explain": ` + tc.cmd + `, "verbosity": "executionStats"}`)
			got := goldenJSON(t, reply)
			path := filepath.Join("testdata", "explain", tc.name+".json")
			if *updateGolden {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run TestExplainGolden -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("explain of %s changed (go test -run TestExplainGolden -update accepts it):\ngot  %s\nwant %s", tc.cmd, got, want)
			}
		})
	}
}

// withDB appends $db to a command.
func withDB(cmd bsoncore.Document, db string) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = append(b, cmd[4:len(cmd)-1]...)
	b = bsoncore.AppendStringElement(b, "$db", db)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// goldenJSON renders an explain reply as indented relaxed Extended JSON without the fields
// that change from run to run (timings, host names, the command echoed back).
func goldenJSON(t *testing.T, reply bsoncore.Document) []byte {
	t.Helper()
	var d bson.D
	if err := bson.Unmarshal(reply, &d); err != nil {
		t.Fatal(err)
	}
	d = scrub(d).(bson.D)
	raw, err := bson.MarshalExtJSON(d, false, false)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	return append(buf.Bytes(), '\n')
}

// volatile are the explain fields golden files leave out.
var volatile = map[string]bool{
	"executionTimeMillis": true, "executionTimeMillisEstimate": true, "host": true, "connectionString": true,
	"serverInfo": true, "command": true, "serverParameters": true, "ok": true,
	"operationTime": true, "$clusterTime": true,
}

// scrub drops volatile fields at every level.
func scrub(v any) any {
	switch x := v.(type) {
	case bson.D:
		out := bson.D{}
		for _, e := range x {
			if !volatile[e.Key] {
				out = append(out, bson.E{Key: e.Key, Value: scrub(e.Value)})
			}
		}
		return out
	case bson.A:
		for i := range x {
			x[i] = scrub(x[i])
		}
		return x
	}
	return v
}

// join joins JSON fragments with commas.
func join(parts []string) string {
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p)
	}
	return b.String()
}
