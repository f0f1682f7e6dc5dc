package project

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// doc parses relaxed Extended JSON, keeping field order and number types.
func doc(tb testing.TB, s string) bsoncore.Document {
	tb.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		tb.Fatalf("bad extended JSON %s: %v", s, err)
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// projCase is {spec, filter (for positional), doc, want}; want is compared byte for
// byte, so field order and number types matter. Cases follow MongoDB's projection
// documentation and jstests/core/query/projection semantics.
type projCase struct {
	name, spec, filter, doc, want string
}

const inventory = `{"_id": 1, "item": "journal", "status": "A", "size": {"h": 14, "w": 21, "uom": "cm"}, "instock": [{"warehouse": "A", "qty": 5}, {"warehouse": "C", "qty": 15}]}`

var projCases = []projCase{
	{"Empty", `{}`, ``, inventory, inventory},
	{"IncludeTwo", `{"item": 1, "status": 1}`, ``, inventory, `{"_id": 1, "item": "journal", "status": "A"}`},
	{"IncludeDocOrder", `{"status": 1, "item": true}`, ``, inventory, `{"_id": 1, "item": "journal", "status": "A"}`},
	{"IncludeNoID", `{"item": 1, "_id": 0}`, ``, inventory, `{"item": "journal"}`},
	{"IncludeNumberTruthy", `{"item": -2.5}`, ``, inventory, `{"_id": 1, "item": "journal"}`},
	{"ExcludeTwo", `{"status": 0, "instock": false}`, ``, inventory, `{"_id": 1, "item": "journal", "size": {"h": 14, "w": 21, "uom": "cm"}}`},
	{"ExcludeID", `{"_id": 0}`, ``, `{"_id": 1, "a": 2}`, `{"a": 2}`},
	{"IncludeIDOnly", `{"_id": 1}`, ``, `{"_id": 1, "a": 2}`, `{"_id": 1}`}, // an inclusion of _id alone
	{"IncludeIDTrueOnly", `{"_id": true}`, ``, `{"_id": 1, "a": 2}`, `{"_id": 1}`},
	{"ExcludeIDOnly", `{"_id": 0}`, ``, `{"_id": 1, "a": 2}`, `{"a": 2}`},
	{"IDIncludedWithExclusion", `{"_id": 1, "a": 0}`, ``, `{"_id": 1, "a": 2, "b": 3}`, `{"_id": 1, "b": 3}`},
	{"IncludeEmbedded", `{"item": 1, "size.uom": 1}`, ``, inventory, `{"_id": 1, "item": "journal", "size": {"uom": "cm"}}`},
	{"IncludeEmbeddedSubSpec", `{"item": 1, "size": {"uom": 1}}`, ``, inventory, `{"_id": 1, "item": "journal", "size": {"uom": "cm"}}`},
	{"ExcludeEmbedded", `{"size.uom": 0}`, ``, inventory, `{"_id": 1, "item": "journal", "status": "A", "size": {"h": 14, "w": 21}, "instock": [{"warehouse": "A", "qty": 5}, {"warehouse": "C", "qty": 15}]}`},
	{"IncludeThroughArray", `{"instock.qty": 1}`, ``, inventory, `{"_id": 1, "instock": [{"qty": 5}, {"qty": 15}]}`},
	{"ExcludeThroughArray", `{"instock.qty": 0, "_id": 0, "size": 0}`, ``, inventory, `{"item": "journal", "status": "A", "instock": [{"warehouse": "A"}, {"warehouse": "C"}]}`},
	{"IncludeArrayDropsScalars", `{"_id": 0, "a.b": 1}`, ``, `{"a": [{"b": 1, "c": 2}, 5, {"c": 3}, [{"b": 4}]]}`, `{"a": [{"b": 1}, {}, [{"b": 4}]]}`},
	{"ExcludeArrayKeepsScalars", `{"_id": 0, "a.b": 0}`, ``, `{"a": [{"b": 1, "c": 2}, 5, [{"b": 4}]]}`, `{"a": [{"c": 2}, 5, [{}]]}`},
	{"IncludeEmptySubdoc", `{"_id": 0, "a.b": 1}`, ``, `{"a": {}}`, `{"a": {}}`},
	{"IncludeScalarParent", `{"_id": 0, "a.b": 1}`, ``, `{"a": 4}`, `{}`},
	{"IncludeNullParent", `{"_id": 0, "a.b": 1}`, ``, `{"a": null}`, `{}`},
	{"IncludeEmptyArrayParent", `{"_id": 0, "a.b": 1}`, ``, `{"a": [1, "string", 4]}`, `{"a": []}`},
	{"IncludeMissing", `{"zzz": 1}`, ``, `{"_id": 1, "a": 2}`, `{"_id": 1}`},
	{"SliceFirst", `{"a": {"$slice": 2}}`, ``, `{"_id": 1, "a": [1, 2, 3, 4], "b": 1}`, `{"_id": 1, "a": [1, 2], "b": 1}`},
	{"SliceLast", `{"a": {"$slice": -2}}`, ``, `{"a": [1, 2, 3, 4]}`, `{"a": [3, 4]}`},
	{"SliceSkipLimit", `{"a": {"$slice": [1, 2]}}`, ``, `{"a": [1, 2, 3, 4]}`, `{"a": [2, 3]}`},
	{"SliceNegativeSkip", `{"a": {"$slice": [-3, 2]}}`, ``, `{"a": [1, 2, 3, 4]}`, `{"a": [2, 3]}`},
	{"SliceFloat", `{"a": {"$slice": 1.4}}`, ``, `{"a": [1, 2, 3, 4]}`, `{"a": [1]}`},
	{"SliceFloatSkip", `{"a": {"$slice": [-2.5, 2]}}`, ``, `{"a": [1, 2, 3, 4]}`, `{"a": [3, 4]}`},
	{"SliceFloatLimit", `{"a": {"$slice": [1, 2.8]}}`, ``, `{"a": [1, 2, 3, 4]}`, `{"a": [2, 3]}`},
	{"SliceInf", `{"a": {"$slice": {"$numberDouble": "Infinity"}}}`, ``, `{"a": [1, 2, 3, 4]}`, `{"a": [1, 2, 3, 4]}`},
	{"SliceSkipPastEnd", `{"a": {"$slice": [10, 2]}}`, ``, `{"a": [1, 2]}`, `{"a": []}`},
	{"SliceNotArray", `{"a": {"$slice": 1}}`, ``, `{"a": 5}`, `{"a": 5}`},
	{"SliceWithInclusion", `{"b": 1, "a": {"$slice": 1}}`, ``, `{"_id": 1, "a": [1, 2], "b": 2, "c": 3}`, `{"_id": 1, "a": [1], "b": 2}`},
	{"SliceWithExclusion", `{"c": 0, "a": {"$slice": 1}}`, ``, `{"_id": 1, "a": [1, 2], "b": 2, "c": 3}`, `{"_id": 1, "a": [1], "b": 2}`},
	{"SliceDotted", `{"a.b": {"$slice": 1}}`, ``, `{"a": [{"b": [1, 2]}, {"b": [3, 4], "c": 1}]}`, `{"a": [{"b": [1]}, {"b": [3], "c": 1}]}`},
	{"ElemMatch", `{"students": {"$elemMatch": {"school": 102}}}`, ``,
		`{"_id": 1, "zipcode": "63109", "students": [{"name": "john", "school": 102, "age": 10}, {"name": "jess", "school": 102, "age": 11}]}`,
		`{"_id": 1, "students": [{"name": "john", "school": 102, "age": 10}]}`},
	{"ElemMatchNone", `{"students": {"$elemMatch": {"school": 999}}}`, ``, `{"_id": 1, "students": [{"school": 102}]}`, `{"_id": 1}`},
	{"ElemMatchValueForm", `{"a": {"$elemMatch": {"$gt": 2}}, "_id": 0}`, ``, `{"a": [1, 3, 5]}`, `{"a": [3]}`},
	{"ElemMatchWithField", `{"zipcode": 1, "students": {"$elemMatch": {"age": {"$gt": 10}}}}`, ``,
		`{"_id": 1, "zipcode": "63109", "students": [{"name": "john", "age": 10}, {"name": "jess", "age": 11}]}`,
		`{"_id": 1, "zipcode": "63109", "students": [{"name": "jess", "age": 11}]}`},
	{"Positional", `{"grades.$": 1}`, `{"grades": {"$gte": 85}}`, `{"_id": 1, "semester": 1, "grades": [70, 87, 90]}`, `{"_id": 1, "grades": [87]}`},
	{"PositionalDocs", `{"grades.$": 1, "_id": 0}`, `{"grades.mean": {"$gt": 70}}`, `{"grades": [{"mean": 60}, {"mean": 90, "std": 2}]}`, `{"grades": [{"mean": 90, "std": 2}]}`},
	{"PositionalNested", `{"a.b.$": 1, "_id": 0}`, `{"a.b": 2}`, `{"a": {"b": [1, 2, 3], "c": 1}}`, `{"a": {"b": [2]}}`},
	{"PositionalArrayThenPath", `{"a.b.$": 1, "_id": 0}`, `{"a.b": 2}`, `{"a": [{"b": 1, "c": 1}, {"b": 2, "c": 2}]}`, `{"a": [{"b": 2}]}`},
	{"LiteralString", `{"_id": 0, "a": 1, "x": "hello"}`, ``, `{"a": 1, "x": 5}`, `{"a": 1, "x": "hello"}`},
	{"LiteralNestedCreatesDoc", `{"_id": 0, "a.b": "v"}`, ``, `{"c": 1}`, `{"a": {"b": "v"}}`},
	{"LiteralInSubdoc", `{"_id": 0, "a.b": true, "a.c": "v"}`, ``, `{"a": {"c": 1, "b": 2, "d": 3}}`, `{"a": {"b": 2, "c": "v"}}`},
	{"LiteralDocument", `{"_id": 0, "x": {"y": "z"}}`, ``, `{"a": 1}`, `{"x": {"y": "z"}}`},
	{"NestedIDExclusion", `{"_id.x": 0}`, ``, `{"_id": {"x": 1, "y": 2}, "a": 1}`, `{"_id": {"y": 2}, "a": 1}`},
}

func TestProjectApply(t *testing.T) {
	for _, tc := range projCases {
		t.Run(tc.name, func(t *testing.T) {
			var opts *Options
			d := doc(t, tc.doc)
			pos := -1
			if tc.filter != "" {
				f, err := match.Compile(doc(t, tc.filter), nil)
				if err != nil {
					t.Fatal(err)
				}
				opts = &Options{Filter: f}
				var ok bool
				if ok, pos = f.MatchPos(d); !ok {
					t.Fatalf("filter %s does not match %s", tc.filter, tc.doc)
				}
			}
			p, err := Compile(doc(t, tc.spec), opts)
			if err != nil {
				t.Fatalf("Compile(%s): %v", tc.spec, err)
			}
			got, err := p.Apply([]byte("prefix"), d, pos)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if !bytes.HasPrefix(got, []byte("prefix")) {
				t.Fatal("Apply did not append to dst")
			}
			got = got[len("prefix"):]
			if want := doc(t, tc.want); !bytes.Equal(got, want) {
				t.Errorf("Apply(%s, %s) =\n%s\nwant\n%s", tc.spec, tc.doc, bson.Raw(got), bson.Raw(want))
			}
		})
	}
}

// projErrCase is a projection Compile or Apply refuses.
type projErrCase struct {
	name, spec, filter, doc string
	code                    mongoerr.Code
	msg                     string
}

var projErrCases = []projErrCase{
	{"MixExclusionInInclusion", `{"a": 1, "b": 0}`, ``, ``, 31254, "Cannot do exclusion on field b in inclusion projection"},
	{"MixInclusionInExclusion", `{"a": 0, "b": 1}`, ``, ``, 31253, "Cannot do inclusion on field b in exclusion projection"},
	{"CollisionPrefixFirst", `{"a": 1, "a.b": 1}`, ``, ``, 31250, "Path collision at a.b remaining portion b"},
	{"CollisionPrefixLater", `{"a.b": 1, "a": 1}`, ``, ``, 31250, "Path collision at a"},
	{"EmptyKey", `{"": 1}`, ``, ``, 40352, "FieldPath cannot be constructed with empty string"},
	{"TrailingDot", `{"v..$": 1}`, ``, ``, 15998, "FieldPath field names may not be empty strings."},
	{"EndsWithDot", `{"a.": 1}`, ``, ``, 40353, "FieldPath must not end with a '.'."},
	{"DollarKey", `{"$": 1}`, ``, ``, 16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField."},
	{"DollarInKey", `{"v.$foo": 1}`, ``, ``, 16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField."},
	{"PositionalMiddle", `{"v.$.foo": 1}`, ``, ``, 31394, "As of 4.4, it's illegal to specify positional operator in the middle of a path.Positional projection may only be used at the end, for example: a.b.$. If the query previously used a form like a.b.$.d, remove the parts following the '$' and the results will be equivalent."},
	{"PositionalExclusion", `{"v.$": false}`, ``, ``, 31395, "positional projection cannot be used with exclusion"},
	{"PositionalTwice", `{"a.$": 1, "b.$": 1}`, ``, ``, 31276, "Cannot specify more than one positional proj. per query."},
	{"PositionalAndElemMatch", `{"a": {"$elemMatch": {"b": 1}}, "c.$": 1}`, ``, ``, 31255, "Cannot specify positional operator and $elemMatch."},
	{"ElemMatchNested", `{"a.b": {"$elemMatch": {"c": 1}}}`, ``, ``, 31275, "Cannot use $elemMatch projection on a nested field."},
	{"ElemMatchNotObject", `{"a": {"$elemMatch": 1}}`, ``, ``, 31274, "elemMatch: Invalid argument, object required."},
	{"ElemMatchBadQuery", `{"a": {"$elemMatch": {"$foo": 1}}}`, ``, ``, 2, "unknown operator: $foo"},
	{"MetaTextScore", `{"s": {"$meta": "textScore"}}`, ``, ``, 40218, "query requires text score metadata, but it is not available"},
	{"EmptySubProjection", `{"a": {}}`, ``, ``, 51270, "An empty sub-projection is not a valid value. Found empty object at path"},
	{"ExpressionWithoutCompiler", `{"a": "$b"}`, ``, ``, 238, "aggregation expressions in find projections are not supported: a"},
	{"LiteralInExclusion", `{"a": 0, "b": "x"}`, ``, ``, 31252, "Cannot use expression other than $meta in exclusion projection"},
	{"SliceString", `{"v": {"$slice": "string"}}`, ``, ``, 28667, `Invalid $slice syntax. The given syntax { $slice: "string" } did not match the find() syntax because :: Location31273: $slice only supports numbers and [skip, limit] arrays :: The given syntax did not match the expression $slice syntax. :: caused by :: Expression $slice takes at least 2 arguments, and at most 3, but 1 were passed in.`},
	{"SliceDocument", `{"v": {"$slice": {"a": {"b": 3}, "b": "string"}}}`, ``, ``, 28667, `Invalid $slice syntax. The given syntax { $slice: { a: { b: 3 }, b: "string" } } did not match the find() syntax because :: Location31273: $slice only supports numbers and [skip, limit] arrays :: The given syntax did not match the expression $slice syntax. :: caused by :: Expression $slice takes at least 2 arguments, and at most 3, but 1 were passed in.`},
	{"SliceEmptyArray", `{"v": {"$slice": []}}`, ``, ``, 28667, `Invalid $slice syntax. The given syntax { $slice: [] } did not match the find() syntax because :: Location31272: $slice array argument should be of form [skip, limit] :: The given syntax did not match the expression $slice syntax. :: caused by :: Expression $slice takes at least 2 arguments, and at most 3, but 0 were passed in.`},
	{"SliceFourArgs", `{"v": {"$slice": [1, 2, 3, 4]}}`, ``, ``, 28667, `Invalid $slice syntax. The given syntax { $slice: [ 1, 2, 3, 4 ] } did not match the find() syntax because :: Location31272: $slice array argument should be of form [skip, limit] :: The given syntax did not match the expression $slice syntax. :: caused by :: Expression $slice takes at least 2 arguments, and at most 3, but 4 were passed in.`},
	{"SliceSkipString", `{"v": {"$slice": ["string", 5]}}`, ``, ``, 28724, "First argument to $slice must be an array, but is of type: string"},
	{"SliceNegativeLimit", `{"v": {"$slice": [3, -2]}}`, ``, ``, 28724, "First argument to $slice must be an array, but is of type: int"},
	{"SliceNegativeLimitLong", `{"v": {"$slice": [{"$numberLong": "3"}, -2]}}`, ``, ``, 28724, "First argument to $slice must be an array, but is of type: long"},
	{"PositionalNoMatch", `{"v.$": 1}`, `{}`, `{"v": [1, 2]}`, 51246, "Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array"},
	{"PositionalFilterOtherPath", `{"v.$": 1}`, `{"_id": 1}`, `{"_id": 1, "v": [1, 2]}`, 51246, "Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array"},
	{"PositionalMismatch", `{"v.foo.$": 1}`, `{"v": 42}`, `{"v": [42, 43]}`, 51247, "Executor error during find command :: caused by :: positional operator '.$' element mismatch"},
}

func TestProjectErrors(t *testing.T) {
	for _, tc := range projErrCases {
		t.Run(tc.name, func(t *testing.T) {
			var opts *Options
			pos := -1
			var d bsoncore.Document
			if tc.filter != "" {
				f, err := match.Compile(doc(t, tc.filter), nil)
				if err != nil {
					t.Fatal(err)
				}
				opts = &Options{Filter: f}
				d = doc(t, tc.doc)
				_, pos = f.MatchPos(d)
			}
			p, err := Compile(doc(t, tc.spec), opts)
			if err == nil && d != nil {
				_, err = p.Apply(nil, d, pos)
			}
			var me *mongoerr.Error
			if !errors.As(err, &me) {
				t.Fatalf("error = %v, want *mongoerr.Error", err)
			}
			if me.Code != tc.code || me.Message != tc.msg {
				t.Errorf("got %d %q\nwant %d %q", me.Code, me.Message, tc.code, tc.msg)
			}
		})
	}
}

func TestProjectIntrospection(t *testing.T) {
	for _, tc := range []struct {
		spec      string
		inclusion bool
		id        bool
		paths     []string
	}{
		{`{}`, false, true, nil},
		{`{"a": 1, "b.c": 1}`, true, true, []string{"_id", "a", "b.c"}},
		{`{"a": 1, "_id": 0}`, true, false, []string{"a"}},
		{`{"a": 0}`, false, true, []string{"a"}},
		{`{"_id": 0}`, false, false, nil},
		{`{"a": {"$slice": 1}}`, false, true, []string{"a"}},
		{`{"a": {"$elemMatch": {"b": 1}}}`, true, true, []string{"_id", "a"}},
	} {
		p, err := Compile(doc(t, tc.spec), nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.IsInclusion() != tc.inclusion || p.IncludesID() != tc.id {
			t.Errorf("%s: IsInclusion %v IncludesID %v", tc.spec, p.IsInclusion(), p.IncludesID())
		}
		if got := p.Paths(); len(got) != len(tc.paths) {
			t.Errorf("%s: Paths = %q, want %q", tc.spec, got, tc.paths)
		} else {
			for i := range got {
				if got[i] != tc.paths[i] {
					t.Errorf("%s: Paths = %q, want %q", tc.spec, got, tc.paths)
				}
			}
		}
	}
}

func TestProjectExpr(t *testing.T) {
	opts := &Options{Expr: func(v bsoncore.Value) (func(bsoncore.Document) (bsoncore.Value, error), error) {
		field := v.StringValue()[1:]
		return func(d bsoncore.Document) (bsoncore.Value, error) {
			x, err := d.LookupErr(field)
			if err != nil {
				return bsoncore.Value{}, nil
			}
			return x, nil
		}, nil
	}}
	p, err := Compile(doc(t, `{"_id": 0, "x": "$b", "y": "$missing"}`), opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Apply(nil, doc(t, `{"a": 1, "b": 2}`), -1)
	if err != nil {
		t.Fatal(err)
	}
	if want := doc(t, `{"x": 2}`); !bytes.Equal(got, want) {
		t.Errorf("got %s want %s", bson.Raw(got), bson.Raw(want))
	}
}
