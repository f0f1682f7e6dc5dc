package write

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/update"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// fuzzDocs are the documents every compiled update is applied to, as an update and as an
// upsert's insert.
var fuzzDocs = []string{
	`{"_id": 1}`,
	`{"_id": 2, "a": 1, "b": [1, {"c": 2}], "d": {"e": "x", "f": [[1], {"g": null}]}}`,
	`{"_id": {"k": 3}, "a": [1, 2, 3], "0": {"a": 1}, "n": {"$numberLong": "9223372036854775807"}, "s": 1.5}`,
	`{"_id": 4, "tags": ["red", "blue"], "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 5}], "t": {"$date": "2024-01-01T00:00:00Z"}}`,
}

// updateSeeds are realistic updates; a JSON array is a pipeline update. af is the first
// array filter, or "".
var updateSeeds = []struct{ u, af string }{
	{`{"$set": {"a": 2, "d.e": "y"}}`, ``},
	{`{"$inc": {"a": 1, "n": 1}, "$mul": {"s": 2}}`, ``},
	{`{"$push": {"tags": {"$each": ["green"], "$sort": 1, "$slice": -2}}}`, ``},
	{`{"$pull": {"items": {"qty": {"$lt": 2}}}, "$addToSet": {"tags": "red"}}`, ``},
	{`{"$unset": {"b": ""}, "$rename": {"a": "z"}}`, ``},
	{`{"$currentDate": {"t": true, "ts": {"$type": "timestamp"}}, "$setOnInsert": {"new": 1}}`, ``},
	{`{"$set": {"items.$[i].qty": 0}}`, `{"i.qty": {"$gt": 2}}`},
	{`{"$inc": {"a.$[]": 10}, "$min": {"s": 0}, "$max": {"m": 5}}`, ``},
	{`{"$set": {"b.$.c": 3}}`, ``},
	{`{"$pop": {"a": -1}, "$pullAll": {"tags": ["blue"]}, "$bit": {"x": {"or": 5}}}`, ``},
	{`{"_id": 1, "replaced": true, "nested": {"a": [1]}}`, ``},
	{`[{"$set": {"total": {"$add": ["$a", 1]}, "when": "$$NOW"}}]`, ``},
	{`[{"$unset": ["b", "d.e"]}, {"$replaceWith": {"$mergeObjects": ["$$ROOT", {"k": 1}]}}]`, ``},
	{`[{"$project": {"a": 1, "sum": {"$sum": "$items.qty"}}}, {"$replaceRoot": {"newRoot": {"x": "$a"}}}]`, ``},
}

// FuzzParseUpdate checks that an update the wire lets through never panics, compiled as
// the update command compiles it (arrayFilters, the pipeline hook of PipelineCompiler):
// compiling fails with a *mongoerr.Error or yields an update whose Apply to fuzzDocs, and
// Upsert from each of them as a query, appends one valid document or fails with a
// *mongoerr.Error. The input is tried both as an update document and, with the same bytes,
// as a pipeline array.
func FuzzParseUpdate(f *testing.F) {
	for _, s := range updateSeeds {
		var u []byte
		if s.u[0] == '[' {
			u = streamtest.ExtArray(f, s.u)
		} else {
			u = streamtest.ExtDoc(f, s.u)
		}
		var af []byte
		if s.af != "" {
			af = streamtest.ExtDoc(f, s.af)
		}
		f.Add(u, af)
	}
	docs := make([]bsoncore.Document, len(fuzzDocs))
	for i, s := range fuzzDocs {
		docs[i] = streamtest.ExtDoc(f, s)
	}
	f.Fuzz(func(t *testing.T, u, af []byte) {
		if wire.ValidateDocument(u) != nil {
			return // the wire answers InvalidBSON before the update compiles
		}
		var filters []bsoncore.Document
		if len(af) > 0 {
			if wire.ValidateDocument(af) != nil {
				return
			}
			filters = []bsoncore.Document{af}
		}
		for _, typ := range []bsoncore.Type{bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray} {
			opts := &update.Options{ArrayFilters: filters, CompilePipeline: PipelineCompiler(nil, nil)}
			upd, err := update.CompileValue(bsoncore.Value{Type: typ, Data: u}, opts)
			if err != nil {
				checkMongoErr(t, "compile", err)
				continue
			}
			for _, d := range docs {
				for _, pos := range []int{-1, 0, 1} {
					checkApplied(t, "apply", d)(upd.Apply([]byte{0xAB}, d, pos, pos == 1))
				}
				out, err := update.Upsert([]byte{0xAB}, d, upd)
				checkApplied(t, "upsert", d)(out, true, err)
			}
		}
	})
}

// checkApplied returns a check of Apply's results on doc: dst (one 0xAB byte) is kept,
// followed by one valid document, or unchanged with a *mongoerr.Error.
func checkApplied(t *testing.T, what string, doc bsoncore.Document) func(out []byte, changed bool, err error) {
	return func(out []byte, changed bool, err error) {
		t.Helper()
		if len(out) == 0 || out[0] != 0xAB {
			t.Fatalf("%s on %s lost dst", what, doc)
		}
		got := out[1:]
		if err != nil {
			checkMongoErr(t, what, err)
			if len(got) != 0 {
				t.Fatalf("%s on %s appended to dst and failed: %v", what, doc, err)
			}
			return
		}
		if verr := bsoncore.Document(got).Validate(); verr != nil {
			t.Fatalf("%s on %s produced invalid BSON %x: %v", what, doc, got, verr)
		}
		if !changed && !bytes.Equal(got, doc) {
			t.Fatalf("%s on %s reported no change and rewrote it: %s", what, doc, bsoncore.Document(got))
		}
	}
}

// checkMongoErr fails t unless err is a *mongoerr.Error: anything else reaches the client
// as a generic InternalError.
func checkMongoErr(t *testing.T, what string, err error) {
	t.Helper()
	if mongoerr.As(err) == nil {
		t.Fatalf("%s error %v (%T) is not a *mongoerr.Error", what, err, err)
	}
}
