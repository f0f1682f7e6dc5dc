package update

import (
	"bytes"
	"testing"

	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// upsertCase is the document an upsert inserts for a query and an update, or its error.
type upsertCase struct {
	name   string
	query  string
	update string
	want   string
	code   mongoerr.Code
	msg    string
}

var upsertCases = []upsertCase{
	{name: "IDFromQuery", query: `{_id: 1}`, update: `{$set: {a: 1}}`, want: `{_id: 1, a: 1}`},
	{name: "EqualityFields", query: `{a: 1}`, update: `{$set: {b: 2}}`, want: `{a: 1, b: 2}`},
	{name: "SetOnInsertApplies", query: `{_id: 1}`, update: `{$setOnInsert: {a: 1}}`, want: `{_id: 1, a: 1}`},
	{name: "RangeIgnored", query: `{_id: 1, a: {$gt: 2}}`, update: `{$inc: {b: 1}}`, want: `{_id: 1, b: 1}`},
	{name: "DottedAndOperators", query: `{"a.b": 1, c: {$eq: 2}, d: {$in: [3]}, e: {$in: [4, 5]}, f: {$all: [6]}}`,
		update: `{$set: {x: 1}}`, want: `{a: {b: 1}, c: 2, d: 3, f: 6, x: 1}`},
	{name: "AndFlattenedInQueryOrder", // jstests/core/upsert4.js
		query: `{_id: 1, $and: [{c: 1}, {d: 1}], a: 12}`, update: `{$inc: {y: 1}}`, want: `{_id: 1, c: 1, d: 1, a: 12, y: 1}`},
	{name: "SingleClauseOr", query: `{$and: [{c: 1}, {d: 1}, {$or: [{x: 1}]}]}`, update: `{$setOnInsert: {_id: 1}}`,
		want: `{_id: 1, c: 1, d: 1, x: 1}`},
	{name: "MultiClauseOrIgnored", query: `{r: RE("s", ""), $and: [{c: 1}, {d: 1}], $or: [{x: 1}, {x: 2}]}`,
		update: `{$setOnInsert: {_id: 1}}`, want: `{_id: 1, c: 1, d: 1}`},
	{name: "SharedPrefix", query: `{"a.b": 1, "a.c": 2, "x.0": 3}`, update: `{$set: {"a.d": 4}}`,
		want: `{a: {b: 1, c: 2, d: 4}, x: {"0": 3}}`},
	{name: "ObjectEquality", query: `{a: {b: 1, c: [2]}}`, update: `{$set: {d: 1}}`, want: `{a: {b: 1, c: [2]}, d: 1}`},
	{name: "NullEquality", query: `{a: null}`, update: `{$set: {b: 1}}`, want: `{a: null, b: 1}`},
	{name: "DBRefIsAValue", query: `{a: {$ref: "c", $id: 1}}`, update: `{$set: {b: 1}}`, want: `{a: {$ref: "c", $id: 1}, b: 1}`},
	{name: "IDMovedFirst", query: `{a: 1}`, update: `{$set: {_id: 7}}`, want: `{_id: 7, a: 1}`},
	{name: "UpdateOverwritesQueryField", query: `{a: 1}`, update: `{$inc: {a: 2}}`, want: `{a: 3}`},
	{name: "PushOnQueryArray", query: `{a: [1]}`, update: `{$push: {a: 2}}`, want: `{a: [1, 2]}`},
	{name: "TopLevelDollarAllowedWhenInserting", query: `{}`, update: `{$set: {a: 1}}`, want: `{a: 1}`},
	{name: "ReplacementIgnoresQuery", query: `{r: {a: 1, b: 1}, "r.a": 1}`, update: `{y: 1}`, want: `{y: 1}`},
	{name: "ReplacementKeepsQueryID", query: `{_id: 5, a: 1}`, update: `{b: 2}`, want: `{_id: 5, b: 2}`},
	{name: "ReplacementOwnID", query: `{a: 1}`, update: `{b: 2, _id: 3}`, want: `{_id: 3, b: 2}`},
	{name: "ReplacementSameID", query: `{_id: 3}`, update: `{_id: 3, b: 2}`, want: `{_id: 3, b: 2}`},
	{name: "IDSubfieldSeeds", query: `{"_id.a": 1}`, update: `{$set: {b: 1}}`, want: `{_id: {a: 1}, b: 1}`},
	{name: "ConflictPrefix", query: `{"a.b": 1, a: {a: 1, b: 1}}`, update: `{$inc: {y: 1}}`, // jstests/core/upsert3.js
		code: mongoerr.NotSingleValueField, msg: "cannot infer query fields to set, both paths 'a.b' and 'a' are matched"},
	{name: "ConflictTwice", query: `{$and: [{a: 1}, {a: 2}]}`, update: `{$set: {b: 1}}`,
		code: mongoerr.NotSingleValueField, msg: "cannot infer query fields to set, path 'a' is matched twice"},
	{name: "ConflictAllTwoValues", query: `{a: {$all: [1, 2]}}`, update: `{$set: {b: 1}}`,
		code: mongoerr.NotSingleValueField, msg: "cannot infer query fields to set, path 'a' is matched twice"},
	{name: "ConflictID", query: `{"_id.a": 1, _id: {a: 1, b: 1}}`, update: `{$setOnInsert: {y: 1}}`,
		code: mongoerr.NotSingleValueField, msg: "cannot infer query fields to set, both paths '_id.a' and '_id' are matched"},
	{name: "ReplacementIDSubfield", query: `{"_id.x": 1}`, update: `{a: 1}`, code: codeNotExactValueField,
		msg: "field at '_id' must be exactly specified, field at sub-path '_id.x'found"},
	{name: "ReplacementChangesQueryID", query: `{_id: 1}`, update: `{_id: 2}`, code: mongoerr.ImmutableField,
		msg: "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2"},
	{name: "ChangesQueryID", query: `{_id: 1}`, update: `{$set: {_id: 2}}`, code: mongoerr.ImmutableField,
		msg: "Performing an update on the path '_id' would modify the immutable field '_id'"},
	{name: "Positional", query: `{a: 1}`, update: `{$set: {"a.$": 2}}`, code: mongoerr.BadValue,
		msg: "The positional operator did not find the match needed from the query."},
	{name: "ArrayUpdateOnMissing", query: `{}`, update: `{$set: {"a.$[]": 2}}`, code: mongoerr.BadValue,
		msg: "The path 'a' must exist in the document in order to apply array updates."},
	{name: "ArrayID", query: `{_id: [1]}`, update: `{$set: {a: 1}}`, code: mongoerr.InvalidIDField,
		msg: "The '_id' value cannot be of type array"},
	{name: "DollarInID", query: `{}`, update: `{$set: {_id: {$x: 1}}}`, code: mongoerr.DollarPrefixedFieldName,
		msg: "_id fields may not contain '$'-prefixed fields: $x is not valid for storage."},
}

func TestUpdateUpsert(t *testing.T) {
	for _, tc := range upsertCases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := Compile(docOf(t, tc.update), testOptions(t, nil))
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			out, err := Upsert([]byte("x"), docOf(t, tc.query), u)
			if tc.code != 0 {
				checkError(t, err, tc.code, tc.msg)
				if string(out) != "x" {
					t.Errorf("dst changed on error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Upsert: %v", err)
			}
			got, want := out[1:], docOf(t, tc.want)
			if !bytes.Equal(got, want) {
				t.Errorf("got  %s\nwant %s", show(got), show(want))
			}
			if err := bsoncore.Document(got).Validate(); err != nil {
				t.Errorf("invalid output: %v", err)
			}
		})
	}
}

// stubPipeline is a pipeline update that sets {p: 1}, standing in for the aggregation
// package.
type stubPipeline struct{ changeID bool }

func (s stubPipeline) Apply(dst []byte, doc bsoncore.Document) ([]byte, error) {
	body, _ := docBody(doc)
	out, at := startDoc(dst, 0, nil, true)
	for len(body) > 0 {
		e, rest, _ := readElem(body)
		body = rest
		if string(e.key) == "_id" && s.changeID {
			out = bsoncore.AppendInt32Element(out, "_id", 99)
			continue
		}
		if string(e.key) != "p" {
			out = append(out, e.raw...)
		}
	}
	out = bsoncore.AppendInt32Element(out, "p", 1)
	return endDoc(out, at), nil
}

func TestUpdatePipelineHook(t *testing.T) {
	opts := testOptions(t, nil)
	opts.CompilePipeline = func(bsoncore.Array) (Pipeline, error) { return stubPipeline{}, nil }
	u, err := CompileValue(bsoncore.Value{Type: bsoncore.TypeArray, Data: docOf(t, `{"0": {$set: {p: 1}}}`)}, opts)
	if err != nil || !u.IsPipeline() {
		t.Fatalf("CompileValue: %v", err)
	}
	out, changed, err := u.Apply(nil, docOf(t, `{a: 1, _id: 1}`), -1, false)
	if err != nil || !changed || !bytes.Equal(out, docOf(t, `{_id: 1, a: 1, p: 1}`)) {
		t.Fatalf("Apply: %s %v %v", show(out), changed, err)
	}
	out, changed, err = u.Apply(nil, docOf(t, `{_id: 1, p: 1}`), -1, false)
	if err != nil || changed || !bytes.Equal(out, docOf(t, `{_id: 1, p: 1}`)) {
		t.Fatalf("no-op Apply: %s %v %v", show(out), changed, err)
	}
	out, err = Upsert(nil, docOf(t, `{_id: 4, q: 1}`), u)
	if err != nil || !bytes.Equal(out, docOf(t, `{_id: 4, p: 1}`)) {
		t.Fatalf("Upsert: %s %v", show(out), err)
	}
	opts.CompilePipeline = func(bsoncore.Array) (Pipeline, error) { return stubPipeline{changeID: true}, nil }
	u, _ = CompilePipeline(nil, opts)
	_, _, err = u.Apply(nil, docOf(t, `{_id: 1}`), -1, false)
	checkError(t, err, mongoerr.ImmutableField,
		"After applying the update, the (immutable) field '_id' was found to have been altered to _id: 99")
}
