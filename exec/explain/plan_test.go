package explain_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/explain"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/project"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// ext parses a document in Extended JSON.
func ext(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	return streamtest.ExtDoc(t, s)
}

// collOf creates db.c on n shards (sharded on hashed k over four partitions when n > 1)
// with indexes a_1, b_1 (unique), s_1 (sparse) and p_1 (partial), inserts docs {_id: i, k,
// a, b, c, p, s} for i < 20, and returns it with the engine that reads it.
func collOf(t *testing.T, n int) (*catalog.Coll, *query.Engine) {
	t.Helper()
	cat := fixture.Stores(t, n)
	spec := store.Collection{DB: "db", Name: "c", Indexes: []store.Index{
		fixture.Index(t, "a_1", `{"a": 1}`),
		{Name: "b_1", Key: ext(t, `{"b": 1}`), Ready: true, Spec: ext(t, `{"key": {"b": 1}, "name": "b_1", "unique": true}`)},
		{Name: "s_1", Key: ext(t, `{"s": 1}`), Ready: true, Spec: ext(t, `{"key": {"s": 1}, "name": "s_1", "sparse": true}`)},
		{Name: "p_1", Key: ext(t, `{"p": 1}`), Ready: true,
			Spec: ext(t, `{"key": {"p": 1}, "name": "p_1", "partialFilterExpression": {"p": {"$gt": 0}}}`)},
	}}
	if n > 1 {
		spec.ShardKey = ext(t, `{"k": "hashed"}`)
		for i := range 4 {
			spec.Partitions = append(spec.Partitions, store.Partition{ID: uint64(i + 1), Lo: uint64(i) << 62, Shard: i % n})
		}
	}
	ci := fixture.Create(t, cat, spec)
	g := query.New(cat, query.Options{})
	vals := make([]bsoncore.Value, 20)
	for i := range vals {
		vals[i] = bsonx.DocValue(ext(t, fmt.Sprintf(`{"_id": %d, "k": %d, "a": %d, "b": %d, "c": %d, "p": %d, "s": %d}`, i, i, i%5, i, i, i%3, i)))
	}
	var res write.Results
	if _, err := write.NewPath(cat, g, nil).Insert(t.Context(), ci, vals, 0, true, false, write.Concern{}, &res, nil); err != nil || len(res.Errs) > 0 {
		t.Fatalf("insert: %v %v", err, res.Errs)
	}
	return ci, g
}

// read describes a read for explain: its filter, sort and projection (Extended JSON, "" for
// none) and the query's other settings.
type read struct {
	filter, sort, proj string
	limit, skip        int64
	noFields           bool
	distinct           string
}

// open compiles r on ci, plans and runs it with g, and returns the query, its plan, its
// shards' streams (with their statistics) and the documents returned.
func open(t *testing.T, ci *catalog.Coll, g *query.Engine, r read) (*query.Query, *query.Plan, []*query.ShardStream, int64) {
	t.Helper()
	f, err := query.CompileFilter(ext(t, r.filter))
	if err != nil {
		t.Fatal(err)
	}
	q := &query.Query{CI: ci, Filter: f, Limit: r.limit, Skip: r.skip, NoFields: r.noFields, Distinct: r.distinct}
	if r.sort != "" {
		if q.Sort, err = query.ParseSort(ext(t, r.sort)); err != nil {
			t.Fatal(err)
		}
	}
	if r.proj != "" {
		if q.Proj, err = project.Compile(ext(t, r.proj), nil); err != nil {
			t.Fatal(err)
		}
	}
	s, p, shards, err := g.Open(q)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := streamtest.Drain(t, s)
	if err != nil {
		t.Fatal(err)
	}
	return q, p, shards, int64(len(docs))
}

// doc wraps the fields appended by f in a document.
func doc(f func(dst []byte) []byte) bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = f(d)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}

// ixscan is the Extended JSON of an IXSCAN-like stage's fields on index name (key field
// key), with its flags, direction and number of ranges.
func ixscan(stage, name, key string, unique, sparse, partial bool, dir string, ranges int) string {
	return fmt.Sprintf(`{"stage": %q, "keyPattern": {%q: 1}, "indexName": %q, "isUnique": %v, "isSparse": %v, `+
		`"isPartial": %v, "direction": %q, "indexRanges": %d}`, stage, key, name, unique, sparse, partial, dir, ranges)
}

// fetch is a FETCH stage over input (Extended JSON).
func fetch(input string) string { return `{"stage": "FETCH", "inputStage": ` + input + `}` }

// TestAppendShardPlan checks the stage tree of each plan the engine makes, and of the stages
// explain puts above it, against what mongod reports.
func TestAppendShardPlan(t *testing.T) {
	ci, g := collOf(t, 1)
	a1 := ixscan("IXSCAN", "a_1", "a", false, false, false, "forward", 1)
	for _, tc := range []struct {
		name string
		r    read
		root string
		want string
	}{
		{"IDHack", read{filter: `{"_id": 5}`}, "", `{"stage": "IDHACK"}`},
		{"IndexScan", read{filter: `{"a": 3}`}, "", fetch(a1)},
		{"Backward", read{filter: `{}`, sort: `{"a": -1}`}, "", fetch(ixscan("IXSCAN", "a_1", "a", false, false, false, "backward", 1))},
		{"Unique", read{filter: `{"b": 3}`}, "", fetch(ixscan("IXSCAN", "b_1", "b", true, false, false, "forward", 1))},
		{"Sparse", read{filter: `{"s": 3}`}, "", fetch(ixscan("IXSCAN", "s_1", "s", false, true, false, "forward", 1))},
		{"CountScan", read{filter: `{"a": 3}`, noFields: true}, "", ixscan("COUNT_SCAN", "a_1", "a", false, false, false, "forward", 1)},
		{"CoveredScan", read{filter: `{"a": {"$in": [1, 2]}}`, noFields: true}, "",
			ixscan("IXSCAN", "a_1", "a", false, false, false, "forward", 2)},
		{"DistinctScan", read{filter: `{}`, distinct: "a"}, "", fetch(ixscan("DISTINCT_SCAN", "a_1", "a", false, false, false, "forward", 1))},
		{"Or", read{filter: `{"$or": [{"a": 1}, {"b": 2}]}`}, "", fetch(`{"stage": "OR", "inputStages": [` +
			a1 + `, ` +
			ixscan("IXSCAN", "b_1", "b", true, false, false, "forward", 1) + `]}`)},
		{"CollScan", read{filter: `{"c": 1}`}, "", `{"stage": "COLLSCAN", "direction": "forward"}`},
		{"BlockingSort", read{filter: `{"a": 3}`, sort: `{"c": 1}`}, "", `{"stage": "SORT", "inputStage": ` + fetch(a1) + `}`},
		{"SortedNoSort", read{filter: `{"a": 3}`, sort: `{"a": 1}`}, "", fetch(a1)},
		{"Wrapped", read{filter: `{"a": 3}`, proj: `{"a": 1}`, limit: 5, skip: 2}, explain.RootCount,
			`{"stage": "COUNT", "inputStage": {"stage": "PROJECTION_DEFAULT", "inputStage": {"stage": "LIMIT", "limitAmount": 5, ` +
				`"inputStage": {"stage": "SKIP", "skipAmount": 2, "inputStage": ` + fetch(a1) + `}}}}`},
		{"FastCount", read{filter: `{}`}, explain.RootFastCount, `{"stage": "COUNT", "inputStage": {"stage": "RECORD_STORE_FAST_COUNT"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, p, _, _ := open(t, ci, g, tc.r)
			got := doc(func(d []byte) []byte { return explain.AppendShardPlan(d, q, p, tc.root) })
			want := ext(t, `{"winningPlan": `+tc.want+`}`)
			if !bytes.Equal(got, want) {
				t.Fatalf("plan %v\nwant %v", got, want)
			}
		})
	}
	var partial *catalog.Index // the engine never plans a partial index: such plans are built
	for _, xi := range ci.Indexes {
		if xi.Partial != nil {
			partial = xi
		}
	}
	for _, tc := range []struct {
		name string
		p    *query.Plan
		want string
	}{
		{"EOF", &query.Plan{Kind: query.PlanEOF}, `{"stage": "EOF"}`},
		{"Partial", &query.Plan{Kind: query.PlanIndex, Index: partial}, fetch(ixscan("IXSCAN", "p_1", "p", false, false, true, "forward", 0))},
		{"PartialKeysOnlyReverse", &query.Plan{Kind: query.PlanIndex, Index: partial, KeysOnly: true, Reverse: true},
			ixscan("IXSCAN", "p_1", "p", false, false, true, "backward", 0)},
		{"Scan", &query.Plan{}, `{"stage": "COLLSCAN", "direction": "forward"}`},
	} {
		got := doc(func(d []byte) []byte { return explain.AppendShardPlan(d, &query.Query{}, tc.p, "") })
		if want := ext(t, `{"winningPlan": `+tc.want+`}`); !bytes.Equal(got, want) {
			t.Errorf("%s: plan %v\nwant %v", tc.name, got, want)
		}
	}
}

// TestAppendWinningPlan checks the mongos shape over the shards: SINGLE_SHARD for one,
// SHARD_MERGE for several, SHARD_MERGE_SORT for several sorted by the plan; each shard
// with its name, host, namespace, partitions (their hashes when the query fixes the shard
// key) and plan.
func TestAppendWinningPlan(t *testing.T) {
	ci, g := collOf(t, 2)
	hosts := func(s int) string { return fmt.Sprintf("shard-%d/host%d:27017", s, s) }
	for _, tc := range []struct {
		name    string
		r       read
		stage   string
		nShards int
	}{
		{"OneShard", read{filter: `{"k": 3}`}, "SINGLE_SHARD", 1},
		{"Merge", read{filter: `{}`}, "SHARD_MERGE", 2},
		{"MergeUnsorted", read{filter: `{}`, sort: `{"c": 1}`}, "SHARD_MERGE", 2},
		{"MergeSort", read{filter: `{}`, sort: `{"a": 1}`}, "SHARD_MERGE_SORT", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, p, shards, _ := open(t, ci, g, tc.r)
			if len(shards) != tc.nShards {
				t.Fatalf("%d shards read", len(shards))
			}
			got := doc(func(d []byte) []byte { return explain.AppendWinningPlan(d, q, p, shards, "db.c", "", hosts) })
			wp := got.Lookup("winningPlan").Document()
			if s := wp.Lookup("stage").StringValue(); s != tc.stage {
				t.Fatalf("stage %s, want %s", s, tc.stage)
			}
			vals, _ := wp.Lookup("shards").Array().Values()
			if len(vals) != len(shards) {
				t.Fatalf("%d shards listed", len(vals))
			}
			for i, v := range vals {
				sd, s := v.Document(), shards[i]
				plan := doc(func(d []byte) []byte { return explain.AppendShardPlan(d, q, p, "") })
				if sd.Lookup("shardName").StringValue() != fmt.Sprintf("shard-%d", s.Shard) ||
					sd.Lookup("connectionString").StringValue() != hosts(s.Shard) ||
					sd.Lookup("namespace").StringValue() != "db.c" ||
					!bytes.Equal(sd.Lookup("winningPlan").Document(), plan.Lookup("winningPlan").Document()) {
					t.Fatalf("shard %d: %v", i, sd)
				}
				parts, _ := sd.Lookup("partitions").Array().Values()
				reads := s.PartitionsRead()
				if len(parts) != len(reads) || len(parts) == 0 {
					t.Fatalf("shard %d: partitions %v, read %v", i, parts, reads)
				}
				for j, pv := range parts {
					pd, pr := pv.Document(), reads[j]
					_, hasHashes := pd.LookupErr("shardKeyHashes")
					if pd.Lookup("id").Int64() != int64(pr.ID) || uint64(pd.Lookup("min").Int64()) != pr.Lo ||
						uint64(pd.Lookup("max").Int64()) != pr.Hi || (hasHashes == nil) != (tc.name == "OneShard") {
						t.Fatalf("shard %d partition %d: %v, read %+v", i, j, pd, pr)
					}
				}
			}
		})
	}
}

// TestAppendExecutionStats checks executionStats: the totals of the keys and documents the
// shards examined, the documents returned, the time and charge given, and each shard's
// share, with its partitions' request units only when charged.
func TestAppendExecutionStats(t *testing.T) {
	ci, g := collOf(t, 2)
	_, _, shards, n := open(t, ci, g, read{filter: `{"c": {"$gte": 5}}`})
	if n != 15 || len(shards) != 2 {
		t.Fatalf("%d returned over %d shards", n, len(shards))
	}
	_, _, ixShards, _ := open(t, ci, g, read{filter: `{"a": 1}`})
	all := slices.Concat(shards, ixShards) // two reads' streams: their totals add up
	var docs, keys int64
	for _, s := range all {
		docs += s.Stats.DocsExamined
		keys += s.Stats.KeysExamined
	}
	if docs != 24 || keys != 4 {
		t.Fatalf("examined %d documents, %d keys", docs, keys)
	}
	for _, charged := range []bool{true, false} {
		got := doc(func(d []byte) []byte {
			return explain.AppendExecutionStats(d, all, 19, 1500*time.Millisecond, 12.5, charged)
		}).Lookup("executionStats").Document()
		var keysOrder []string
		elems, _ := got.Elements()
		for _, el := range elems {
			keysOrder = append(keysOrder, el.Key())
		}
		if strings.Join(keysOrder, ",") != "nReturned,executionTimeMillis,totalKeysExamined,totalDocsExamined,requestCharge,executionStages" ||
			got.Lookup("nReturned").AsInt64() != 19 || got.Lookup("executionTimeMillis").AsInt64() != 1500 ||
			got.Lookup("totalKeysExamined").AsInt64() != keys || got.Lookup("totalDocsExamined").AsInt64() != docs ||
			got.Lookup("requestCharge").Double() != 12.5 {
			t.Fatalf("charged %v: %v", charged, got)
		}
		vals, _ := got.Lookup("executionStages", "shards").Array().Values()
		if len(vals) != len(all) {
			t.Fatalf("%d shards", len(vals))
		}
		for i, v := range vals {
			sd, s := v.Document(), all[i]
			_, hasParts := sd.LookupErr("partitions")
			wantCharge := 0.0
			if charged {
				wantCharge = s.Stats.Charge()
			}
			if sd.Lookup("shardName").StringValue() != fmt.Sprintf("shard-%d", s.Shard) ||
				sd.Lookup("nReturned").AsInt64() != s.Stats.Returned || sd.Lookup("totalDocsExamined").AsInt64() != s.Stats.DocsExamined ||
				sd.Lookup("totalKeysExamined").AsInt64() != s.Stats.KeysExamined ||
				sd.Lookup("requestCharge").Double() != wantCharge || (hasParts == nil) != charged {
				t.Fatalf("charged %v, shard %d: %v", charged, i, sd)
			}
		}
	}
}
