package exec

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// writeStageHarness runs commands against an in-process executor in database "test".
type writeStageHarness struct {
	t *testing.T
	c wire.ConnHandler
}

// newWriteStageHarness returns a harness over a fresh single-shard executor.
func newWriteStageHarness(t *testing.T) *writeStageHarness {
	e := benchExecutor(t)
	return &writeStageHarness{t: t, c: e.Connect(wire.ConnInfo{ID: 1})}
}

// cmd runs a command given as Extended JSON and returns its reply, ok or not.
func (h *writeStageHarness) cmd(body string) bsoncore.Document {
	h.t.Helper()
	d := streamtest.ExtDoc(h.t, body)
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = append(b, d[4:len(d)-1]...)
	b = bsoncore.AppendStringElement(b, "$db", "test")
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	reply, err := h.c.Handle(context.Background(), &wire.Request{Body: b})
	if err != nil {
		h.t.Fatal(err)
	}
	return reply
}

// ok runs a command that must succeed.
func (h *writeStageHarness) ok(body string) bsoncore.Document {
	h.t.Helper()
	reply := h.cmd(body)
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
		h.t.Fatalf("%s: %v", body, reply)
	}
	return reply
}

// fails runs a command that must fail with code and returns the reply.
func (h *writeStageHarness) fails(body string, code mongoerr.Code) bsoncore.Document {
	h.t.Helper()
	reply := h.cmd(body)
	if got, _ := reply.Lookup("code").Int32OK(); got != int32(code) {
		h.t.Fatalf("%s: code %d, want %d: %v", body, got, code, reply)
	}
	if name, _ := reply.Lookup("codeName").StringValueOK(); name != code.String() {
		h.t.Errorf("codeName %q, want %q", name, code.String())
	}
	return reply
}

// insert seeds coll with Extended JSON documents.
func (h *writeStageHarness) insert(coll string, docs ...string) {
	h.t.Helper()
	h.ok(`{"insert": "` + coll + `", "documents": [` + strings.Join(docs, ",") + `]}`)
}

// docs returns coll's documents in _id order.
func (h *writeStageHarness) docs(coll string) []bsoncore.Document {
	h.t.Helper()
	reply := h.ok(`{"find": "` + coll + `", "sort": {"_id": 1}}`)
	vals, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
	out := make([]bsoncore.Document, len(vals))
	for i, v := range vals {
		out[i] = v.Document()
	}
	return out
}

// collections returns the names of the database's collections.
func (h *writeStageHarness) collections() []string {
	h.t.Helper()
	reply := h.ok(`{"listCollections": 1, "nameOnly": true}`)
	vals, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
	var names []string
	for _, v := range vals {
		names = append(names, v.Document().Lookup("name").StringValue())
	}
	return names
}

// aggregate builds an aggregate command on coll with pipeline (JSON).
func aggregate(coll, pipeline string) string {
	return `{"aggregate": "` + coll + `", "pipeline": ` + pipeline + `, "cursor": {}}`
}

func TestAggregateOutReplacesCollection(t *testing.T) {
	h := newWriteStageHarness(t)
	h.insert("src", `{"_id": 1, "a": 1}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 3}`)
	h.insert("dst", `{"_id": 9, "a": 9}`)
	h.ok(`{"createIndexes": "dst", "indexes": [{"key": {"a": 1}, "name": "a_1", "unique": true}]}`)

	reply := h.ok(aggregate("src", `[{"$match": {"a": {"$gte": 2}}}, {"$project": {"a": 1, "b": "x"}}, {"$out": "dst"}]`))
	if n := len(reply.Lookup("cursor", "firstBatch").Array()); n != 5 {
		t.Errorf("firstBatch not empty: %v", reply)
	}
	if id := reply.Lookup("cursor", "id").Int64(); id != 0 {
		t.Errorf("cursor id %d, want 0", id)
	}
	streamtest.CheckDocs(t, h.docs("dst"), []string{`{"_id": 2, "a": 2, "b": "x"}`, `{"_id": 3, "a": 3, "b": "x"}`})
	idx := h.ok(`{"listIndexes": "dst"}`)
	if !strings.Contains(idx.String(), `"a_1"`) || !strings.Contains(idx.String(), `"unique": true`) {
		t.Errorf("the target lost its index: %v", idx)
	}
	for _, n := range h.collections() {
		if strings.HasPrefix(n, "tmp.agg_out.") {
			t.Errorf("temporary collection %s left behind", n)
		}
	}

	// A duplicate key in the target's unique index fails the $out and keeps the target.
	h.fails(aggregate("src", `[{"$project": {"a": {"$literal": 7}}}, {"$out": "dst"}]`), mongoerr.DuplicateKey)
	streamtest.CheckDocs(t, h.docs("dst"), []string{`{"_id": 2, "a": 2, "b": "x"}`, `{"_id": 3, "a": 3, "b": "x"}`})
	for _, n := range h.collections() {
		if strings.HasPrefix(n, "tmp.agg_out.") {
			t.Errorf("temporary collection %s left behind after a failure", n)
		}
	}

	// {db, coll} writes to another database; a missing source makes an empty target.
	h.ok(aggregate("src", `[{"$out": {"db": "other", "coll": "copy"}}]`))
	h.ok(aggregate("missing", `[{"$out": "empty"}]`))
	if !slices.Contains(h.collections(), "empty") || len(h.docs("empty")) != 0 {
		t.Errorf("$out from a missing collection did not create an empty target")
	}
}

func TestAggregateMergeModes(t *testing.T) {
	target := []string{`{"_id": 1, "a": 1, "b": 1}`, `{"_id": 2, "a": 2}`}
	source := []string{`{"_id": 1, "a": 10}`, `{"_id": 3, "a": 30}`}
	cases := []struct {
		name  string
		merge string
		want  []string
		code  mongoerr.Code
	}{
		{"Default", `"dst"`, []string{`{"_id": 1, "a": 10, "b": 1}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 30}`}, 0},
		{"ReplaceInsert", `{"into": "dst", "whenMatched": "replace"}`,
			[]string{`{"_id": 1, "a": 10}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 30}`}, 0},
		{"ReplaceDiscard", `{"into": "dst", "whenMatched": "replace", "whenNotMatched": "discard"}`,
			[]string{`{"_id": 1, "a": 10}`, `{"_id": 2, "a": 2}`}, 0},
		{"ReplaceFail", `{"into": "dst", "whenMatched": "replace", "whenNotMatched": "fail"}`,
			[]string{`{"_id": 1, "a": 10}`, `{"_id": 2, "a": 2}`}, mongoerr.MergeStageNoMatchingDocument},
		{"MergeDiscard", `{"into": "dst", "whenMatched": "merge", "whenNotMatched": "discard"}`,
			[]string{`{"_id": 1, "a": 10, "b": 1}`, `{"_id": 2, "a": 2}`}, 0},
		{"KeepExisting", `{"into": "dst", "whenMatched": "keepExisting"}`,
			[]string{`{"_id": 1, "a": 1, "b": 1}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 30}`}, 0},
		{"FailInsert", `{"into": "dst", "whenMatched": "fail"}`, append(target, `{"_id": 3, "a": 30}`), mongoerr.DuplicateKey},
		{"Pipeline", `{"into": "dst", "let": {"x": "$a"}, "whenMatched": [{"$set": {"b": {"$add": ["$$x", "$$new.a", "$a"]}}}]}`,
			[]string{`{"_id": 1, "a": 1, "b": 21}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 30}`}, 0},
		{"PipelineDiscard", `{"into": "dst", "whenMatched": [{"$unset": "b"}], "whenNotMatched": "discard"}`,
			[]string{`{"_id": 1, "a": 1}`, `{"_id": 2, "a": 2}`}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newWriteStageHarness(t)
			h.insert("src", source...)
			h.insert("dst", target...)
			cmd := aggregate("src", `[{"$sort": {"_id": 1}}, {"$merge": `+tc.merge+`}]`)
			if tc.code != 0 {
				h.fails(cmd, tc.code)
			} else {
				h.ok(cmd)
			}
			streamtest.CheckDocs(t, h.docs("dst"), tc.want)
		})
	}
}

func TestAggregateMergeOnFields(t *testing.T) {
	h := newWriteStageHarness(t)
	h.insert("src", `{"_id": 1, "k": "a", "v": 1}`, `{"_id": 2, "k": "b", "v": 2}`, `{"_id": 3, "k": "a", "v": 3}`)
	// No unique index on k yet; a missing target takes _id only.
	h.fails(aggregate("src", `[{"$merge": {"into": "dst", "on": "k"}}]`), 51190)
	h.insert("dst", `{"_id": 10, "k": "a", "v": 0}`)
	h.fails(aggregate("src", `[{"$merge": {"into": "dst", "on": "k"}}]`), 51190)
	h.ok(`{"createIndexes": "dst", "indexes": [{"key": {"k": 1}, "name": "k_1", "unique": true}]}`)
	// Source document 1's _id differs from the matched target's, which merge cannot change;
	// document 2 (unmatched) is inserted all the same, as MongoDB's unordered batches do.
	// Then documents 1 and 3 share k: "a": the second sees the first's write.
	h.fails(aggregate("src", `[{"$merge": {"into": "dst", "on": "k"}}]`), mongoerr.ImmutableField)
	h.ok(aggregate("src", `[{"$sort": {"_id": 1}}, {"$project": {"_id": 0}}, {"$merge": {"into": "dst", "on": ["k"], "whenMatched": "replace"}}]`))
	streamtest.CheckDocs(t, h.docs("dst"), []string{`{"_id": 2, "k": "b", "v": 2}`, `{"_id": 10, "k": "a", "v": 3}`})
	h.fails(aggregate("src", `[{"$project": {"k": null}}, {"$merge": {"into": "dst", "on": "k"}}]`), 51132)
	h.fails(aggregate("src", `[{"$project": {"k": ["x"]}}, {"$merge": {"into": "dst", "on": "k"}}]`), 51185)
}

func TestAggregateMergeSameCollection(t *testing.T) {
	h := newWriteStageHarness(t)
	h.insert("c", `{"_id": 1, "n": 1}`, `{"_id": 2, "n": 2}`)
	h.ok(aggregate("c", `[{"$project": {"n": {"$multiply": ["$n", 10]}}}, {"$merge": "c"}]`))
	streamtest.CheckDocs(t, h.docs("c"), []string{`{"_id": 1, "n": 10}`, `{"_id": 2, "n": 20}`})
}

func TestAggregateWriteStageErrors(t *testing.T) {
	h := newWriteStageHarness(t)
	h.insert("c", `{"_id": 1}`)
	cases := []struct {
		name     string
		pipeline string
		code     mongoerr.Code
	}{
		{"OutNotLast", `[{"$out": "x"}, {"$match": {}}]`, 40601},
		{"MergeNotLast", `[{"$merge": "x"}, {"$match": {}}]`, 40601},
		{"OutInLookup", `[{"$lookup": {"from": "c", "pipeline": [{"$out": "x"}], "as": "y"}}]`, 51047},
		{"MergeInUnionWith", `[{"$unionWith": {"coll": "c", "pipeline": [{"$merge": "x"}]}}]`, 31441},
		{"OutInFacet", `[{"$facet": {"a": [{"$out": "x"}]}}]`, 40600},
		{"OutType", `[{"$out": 1}]`, 16990},
		{"OutSystem", `[{"$out": "system.x"}]`, 17385},
		{"OutInternalDB", `[{"$out": {"db": "admin", "coll": "x"}}]`, 31321},
		{"OutEmptyName", `[{"$out": ""}]`, mongoerr.InvalidNamespace},
		{"OutMissingColl", `[{"$out": {"db": "test"}}]`, mongoerr.Location40414},
		{"OutUnknownField", `[{"$out": {"db": "test", "coll": "x", "y": 1}}]`, mongoerr.Location40415},
		{"MergeType", `[{"$merge": 1}]`, mongoerr.TypeMismatch},
		{"MergeNoInto", `[{"$merge": {}}]`, mongoerr.Location40414},
		{"MergeIntoType", `[{"$merge": {"into": 1}}]`, 51178},
		{"MergeIntoNoColl", `[{"$merge": {"into": {"db": "test"}}}]`, 5786801},
		{"MergeOnType", `[{"$merge": {"into": "x", "on": 1}}]`, 51186},
		{"MergeOnEmpty", `[{"$merge": {"into": "x", "on": []}}]`, 51187},
		{"MergeOnElemType", `[{"$merge": {"into": "x", "on": [1]}}]`, 51134},
		{"MergeOnDuplicate", `[{"$merge": {"into": "x", "on": ["_id", "_id"]}}]`, 31465},
		{"MergeModes", `[{"$merge": {"into": "x", "whenMatched": "keepExisting", "whenNotMatched": "fail"}}]`, 51181},
		{"MergeBadMode", `[{"$merge": {"into": "x", "whenMatched": "nope"}}]`, mongoerr.BadValue},
		{"MergeBadNotMatched", `[{"$merge": {"into": "x", "whenNotMatched": "nope"}}]`, mongoerr.BadValue},
		{"MergeLetWithoutPipeline", `[{"$merge": {"into": "x", "let": {"a": 1}}}]`, 51199},
		{"MergeLetNew", `[{"$merge": {"into": "x", "let": {"new": 1}, "whenMatched": [{"$set": {"a": 1}}]}}]`, 51273},
		{"MergeSystem", `[{"$merge": "system.x"}]`, 31319},
		{"MergeInternalDB", `[{"$merge": {"into": {"db": "config", "coll": "x"}}}]`, 31320},
		{"MergeUnknownField", `[{"$merge": {"into": "x", "nope": 1}}]`, mongoerr.Location40415},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			h.fails(aggregate("c", tc.pipeline), tc.code)
		})
	}
	h.t = t
	// Explain describes a write without running it, at queryPlanner verbosity only.
	h.ok(`{"aggregate": "c", "pipeline": [{"$out": "x"}], "explain": true}`)
	h.fails(`{"explain": {"aggregate": "c", "pipeline": [{"$out": "x"}], "cursor": {}}, "verbosity": "executionStats"}`, 51029)
	h.fails(`{"aggregate": "c", "pipeline": [{"$out": "x"}], "explain": true, "writeConcern": {"w": 1}}`, mongoerr.InvalidOptions)
	h.fails(`{"aggregate": "c", "pipeline": [], "cursor": {}, "writeConcern": {"w": 1}}`, mongoerr.InvalidOptions)
	h.fails(`{"aggregate": "c", "pipeline": [{"$out": "x"}], "cursor": {}, "readConcern": {"level": "linearizable"}}`, mongoerr.InvalidOptions)
	if slices.Contains(h.collections(), "x") {
		t.Errorf("a refused or explained $out wrote its target")
	}
	h.ok(`{"aggregate": "c", "pipeline": [{"$out": "x"}], "cursor": {}, "writeConcern": {"w": 1}}`)
}
