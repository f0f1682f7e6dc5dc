package query

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/project"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// These fuzzers compile filters and projections as find does (crud's compileFind:
// the $expr and expression hooks wired in, the filter feeding the positional $), which the
// package fuzzers of exec/match and exec/project leave out. Run them with
//
//	go test ./exec/query -run '^$' -fuzz '^FuzzCompileFilter$' -fuzztime 3m

// fuzzDocs are the documents every compiled filter and projection runs over: scalars of
// several types, nested documents, arrays of scalars, of documents and of arrays.
var fuzzDocs = []string{
	`{"_id": 1}`,
	`{"_id": 2, "a": 1, "b": "x", "c": 2.5, "d": null, "e": true}`,
	`{"_id": {"k": 3}, "a": [1, 2, 3], "b": [{"c": 1, "d": [4, 5]}, {"c": 2}], "x": {"y": {"z": [[1], {"w": 1}]}}}`,
	`{"_id": "s", "a": {"$numberLong": "9007199254740993"}, "b": {"$numberDecimal": "1.5"}, "t": {"$date": "2024-01-01T00:00:00Z"}, "0": {"a": 1}}`,
	`{"_id": 5, "tags": ["red", "blue"], "qty": 25, "size": {"h": 14, "w": 21, "uom": "cm"}, "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 5}]}`,
}

// filterSeeds are realistic filters: the operators applications send most.
var filterSeeds = []string{
	`{}`,
	`{"_id": 1}`,
	`{"a": {"$gte": 1, "$lt": 3}}`,
	`{"tags": {"$in": ["red", "green"]}, "qty": {"$gt": 10}}`,
	`{"$or": [{"a": 1}, {"b": {"$exists": false}}]}`,
	`{"items": {"$elemMatch": {"sku": "b", "qty": {"$gte": 2}}}}`,
	`{"b.c": 2, "a": {"$ne": null}}`,
	`{"size.uom": {"$regex": "^c", "$options": "i"}}`,
	`{"a": {"$type": ["int", "long"]}, "b": {"$not": {"$size": 2}}}`,
	`{"$expr": {"$gt": ["$qty", {"$size": "$tags"}]}}`,
	`{"a": {"$all": [1, 2]}, "c": {"$mod": [2, 0]}}`,
	`{"$nor": [{"x.y.z": {"$exists": true}}], "a": {"$bitsAllSet": 1}}`,
	`{"$jsonSchema": {"required": ["_id"], "properties": {"qty": {"bsonType": "int", "minimum": 0}}}}`,
	`{"$and": [{"a": {"$lte": {"$numberLong": "5"}}}, {"t": {"$lt": {"$date": "2025-01-01T00:00:00Z"}}}]}`,
}

// projectionSeeds are realistic find projections, each paired with a filter for the
// positional $.
var projectionSeeds = []struct{ proj, filter string }{
	{`{"a": 1}`, `{}`},
	{`{"_id": 0, "b.c": 1}`, `{}`},
	{`{"a": 0, "x": 0}`, `{}`},
	{`{"items.$": 1}`, `{"items.sku": "b"}`},
	{`{"a.$": 1}`, `{"a": {"$gt": 1}}`},
	{`{"a": {"$slice": [1, 2]}, "tags": {"$slice": -1}}`, `{}`},
	{`{"items": {"$elemMatch": {"qty": {"$gt": 1}}}}`, `{}`},
	{`{"total": {"$add": ["$qty", 1]}, "name": "$size.uom"}`, `{}`},
	{`{"x.y": 1, "_id": 0}`, `{}`},
	{`{"lit": {"$literal": 5}, "a": true}`, `{}`},
	{`{"big": {"$gt": ["$qty", 10]}, "s": {"$concat": ["$b", "-"]}}`, `{}`},
	{`{"b": {"$elemMatch": {"c": 2}}, "a": 1}`, `{}`},
	{`{"items.sku": 1, "items.qty": 0}`, `{}`},
}

// FuzzCompileFilter checks that a filter the wire lets through never panics: CompileFilter
// either fails with a *mongoerr.Error or returns a filter that runs over fuzzDocs, and a
// $expr failing at run time fails with a *mongoerr.Error too.
func FuzzCompileFilter(f *testing.F) {
	for _, s := range filterSeeds {
		f.Add([]byte(streamtest.ExtDoc(f, s)))
	}
	docs := extDocs(f, fuzzDocs)
	f.Fuzz(func(t *testing.T, filter []byte) {
		if wire.ValidateDocument(filter) != nil {
			return // the wire answers InvalidBSON before the filter compiles
		}
		flt, err := CompileFilter(filter)
		if err != nil {
			checkMongoErr(t, "compile", err)
			return
		}
		for _, d := range docs {
			if _, err := flt.MatchErr(d); err != nil {
				checkMongoErr(t, "match", err)
			}
			flt.MatchPos(d)
		}
		for _, p := range flt.Paths() {
			flt.Equalities(p)
			flt.Intervals(p)
			flt.IntervalsNonMultikey(p)
		}
	})
}

// FuzzParseProjection checks that a projection the wire lets through never panics:
// project.Compile, with the filter's positional match and the expression hook as find
// passes them, either fails with a *mongoerr.Error or returns a projection whose Apply on
// fuzzDocs yields one valid document or a *mongoerr.Error.
func FuzzParseProjection(f *testing.F) {
	for _, s := range projectionSeeds {
		f.Add([]byte(streamtest.ExtDoc(f, s.proj)), []byte(streamtest.ExtDoc(f, s.filter)))
	}
	docs := extDocs(f, fuzzDocs)
	f.Fuzz(func(t *testing.T, spec, filter []byte) {
		if wire.ValidateDocument(spec) != nil || wire.ValidateDocument(filter) != nil {
			return
		}
		flt, err := CompileFilter(filter)
		if err != nil {
			return // FuzzCompileFilter's ground
		}
		p, err := project.Compile(spec, &project.Options{Filter: flt, Expr: expr.CompileValue})
		if err != nil {
			checkMongoErr(t, "compile", err)
			return
		}
		for _, d := range docs {
			pos := -1
			if ok, mp := flt.MatchPos(d); ok {
				pos = mp
			}
			out, err := p.Apply(nil, d, pos)
			if err != nil {
				checkMongoErr(t, "apply", err)
				continue
			}
			if err := bsoncore.Document(out).Validate(); err != nil {
				t.Fatalf("Apply on %s produced invalid BSON: %v", d, err)
			}
		}
	})
}

// checkMongoErr fails t unless err is a *mongoerr.Error: anything else would reach the
// client as a generic InternalError.
func checkMongoErr(t *testing.T, what string, err error) {
	t.Helper()
	if mongoerr.As(err) == nil {
		t.Fatalf("%s error %v (%T) is not a *mongoerr.Error", what, err, err)
	}
}

// extDocs parses each Extended JSON string of ss.
func extDocs(tb testing.TB, ss []string) []bsoncore.Document {
	out := make([]bsoncore.Document, len(ss))
	for i, s := range ss {
		out[i] = streamtest.ExtDoc(tb, s)
	}
	return out
}
