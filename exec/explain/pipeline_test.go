package explain_test

import (
	"bytes"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/explain"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
)

// stages parses a pipeline (Extended JSON) as aggregate does.
func stages(t *testing.T, pipeline string) []agg.Stage {
	t.Helper()
	p, err := agg.Parse(&agg.Env{DB: "db", Coll: "c", Opts: &expr.Options{Now: time.Now()}}, streamtest.ExtArray(t, pipeline), false)
	if err != nil {
		t.Fatal(err)
	}
	return p.Stages
}

// TestDoingMerge checks the merging half of a split $group: the group's spec with
// $doingMerge: true last, the original left as it was.
func TestDoingMerge(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"Fields", `{"$group": {"_id": "$a", "n": {"$sum": 1}, "m": {"$max": "$b"}}}`,
			`{"$group": {"_id": "$a", "n": {"$sum": 1}, "m": {"$max": "$b"}, "$doingMerge": true}}`},
		{"IDOnly", `{"$group": {"_id": null}}`, `{"$group": {"_id": null, "$doingMerge": true}}`},
		{"Empty", `{"$group": {}}`, `{"$group": {"$doingMerge": true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := ext(t, tc.spec)
			orig := bytes.Clone(spec)
			if got, want := explain.DoingMerge(spec), ext(t, tc.want); !bytes.Equal(got, want) {
				t.Fatalf("DoingMerge = %v, want %v", got, want)
			}
			if !bytes.Equal(spec, orig) {
				t.Fatal("DoingMerge changed its argument")
			}
		})
	}
}

// TestAppendStageSpecs checks that the stages are listed in order as each renders itself,
// after the first document when there is one.
func TestAppendStageSpecs(t *testing.T) {
	ss := stages(t, `[{"$match": {"a": 1}}, {"$project": {"a": 1}}, {"$limit": 3}]`)
	first := ext(t, `{"$cursor": {"x": 1}}`)
	for _, tc := range []struct {
		name  string
		first bsoncore.Document
		ss    []agg.Stage
		want  []bsoncore.Document
	}{
		{"WithFirst", first, ss, []bsoncore.Document{first, ss[0].Spec(), ss[1].Spec(), ss[2].Spec()}},
		{"WithoutFirst", nil, ss, []bsoncore.Document{ss[0].Spec(), ss[1].Spec(), ss[2].Spec()}},
		{"OnlyFirst", first, nil, []bsoncore.Document{first}},
		{"Nothing", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := doc(func(d []byte) []byte { return explain.AppendStageSpecs(d, "stages", tc.first, tc.ss) })
			vals, err := got.Lookup("stages").Array().Values()
			if err != nil || len(vals) != len(tc.want) {
				t.Fatalf("stages %v, %v", got, err)
			}
			for i, v := range vals {
				if !bytes.Equal(v.Document(), tc.want[i]) {
					t.Errorf("stage %d: %v, want %v", i, v, tc.want[i])
				}
			}
			if err := got.Lookup("stages").Array().Validate(); err != nil { // array keys "0", "1", ...
				t.Fatal(err)
			}
		})
	}
}

// TestAppendMergerPart checks the merger's part of a split pipeline: $mergeCursors (with the
// sort the shards' streams are merged by), then the skip and limit applied after the merge,
// the merging $group, and the rest of the pipeline.
func TestAppendMergerPart(t *testing.T) {
	rest := stages(t, `[{"$project": {"a": 1}}, {"$limit": 3}]`)
	group := explain.DoingMerge(ext(t, `{"$group": {"_id": "$a"}}`))
	cursors := func(sort string) string {
		s := ""
		if sort != "" {
			s = `"sort": ` + sort + `, `
		}
		return `{"$mergeCursors": {` + s + `"compareWholeSortKey": false, "tailableMode": "normal", "nss": "db.c", ` +
			`"allowPartialResults": false, "recordRemoteOpWaitTime": false, "requestQueryStatsFromRemotes": false}}`
	}
	for _, tc := range []struct {
		name, sort  string
		skip, limit int64
		group       bsoncore.Document
		rest        []agg.Stage
		want        []string // Extended JSON; "" for the next of rest's specs
	}{
		{"MergeOnly", "", 0, 0, nil, nil, []string{cursors("")}},
		{"Sorted", `{"a": 1, "b": -1}`, 0, 0, nil, nil, []string{cursors(`{"a": 1, "b": -1}`)}},
		{"Window", "", 2, 5, nil, nil, []string{cursors(""), `{"$skip": {"$numberLong": "2"}}`, `{"$limit": {"$numberLong": "5"}}`}},
		{"Everything", `{"a": 1}`, 1, 9, group, rest, []string{cursors(`{"a": 1}`), `{"$skip": {"$numberLong": "1"}}`,
			`{"$limit": {"$numberLong": "9"}}`, `{"$group": {"_id": "$a", "$doingMerge": true}}`, "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &query.Query{Skip: tc.skip, Limit: tc.limit}
			if tc.sort != "" {
				var err error
				if q.Sort, err = query.ParseSort(ext(t, tc.sort)); err != nil {
					t.Fatal(err)
				}
			}
			got := doc(func(d []byte) []byte { return explain.AppendMergerPart(d, q, "db.c", tc.group, tc.rest) })
			vals, err := got.Lookup("mergerPart").Array().Values()
			if err != nil || len(vals) != len(tc.want) {
				t.Fatalf("mergerPart %v, %v", got, err)
			}
			r := 0
			for i, v := range vals {
				want := []byte(nil)
				if tc.want[i] == "" {
					want, r = tc.rest[r].Spec(), r+1
				} else {
					want = ext(t, tc.want[i])
				}
				if !bytes.Equal(v.Document(), want) {
					t.Errorf("stage %d: %v\nwant %v", i, v, bsoncore.Document(want))
				}
			}
		})
	}
}
