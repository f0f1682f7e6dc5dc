package args_test

import (
	"errors"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// doc parses a document in Extended JSON.
func doc(t *testing.T, ext string) bsoncore.Document {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(ext), false, &d); err != nil {
		t.Fatalf("%s: %v", ext, err)
	}
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// val parses one value in Extended JSON (`1`, `{"$numberLong": "2"}`, `"s"`…).
func val(t *testing.T, ext string) bsoncore.Value {
	t.Helper()
	return doc(t, `{"v": `+ext+`}`).Lookup("v")
}

// refusal describes an expected MongoDB error: its code, codeName and message ("" when
// no error is expected).
type refusal struct {
	code     mongoerr.Code
	codeName string
	msg      string
}

// checkErr fails unless err is the refusal want (or nil when want.msg is "").
func checkErr(t *testing.T, err error, want refusal) {
	t.Helper()
	if want.msg == "" {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	me := mongoerr.As(err)
	if me == nil {
		t.Fatalf("error %v, want %s (%d): %s", err, want.codeName, want.code, want.msg)
	}
	if me.Code != want.code || me.Code.String() != want.codeName || me.Message != want.msg {
		t.Fatalf("error %s (%d) %q, want %s (%d) %q", me.Code, me.Code, me.Message, want.codeName, want.code, want.msg)
	}
}

// typeMismatch is the refusal of find.f for a value of type got where want ("type 'string'",
// "types '[…]'") was expected.
func typeMismatch(got, want string) refusal {
	return refusal{mongoerr.TypeMismatch, "TypeMismatch", "BSON field 'find.f' is the wrong type '" + got + "', expected " + want}
}

// TestTypedAccessors checks String, Doc, Array and Bool: the values each takes, and
// MongoDB's TypeMismatch naming the type found and the types expected for the others.
func TestTypedAccessors(t *testing.T) {
	for _, tc := range []struct {
		name, fn, in string
		want         any // the value returned when there is no error
		err          refusal
	}{
		{"StringString", "String", `"abc"`, "abc", refusal{}},
		{"StringEmpty", "String", `""`, "", refusal{}},
		{"StringFromInt", "String", `1`, nil, typeMismatch("int", "type 'string'")},
		{"StringFromNull", "String", `null`, nil, typeMismatch("null", "type 'string'")},
		{"DocDoc", "Doc", `{"a": 1}`, 12, refusal{}}, // the document's length
		{"DocFromArray", "Doc", `[1]`, nil, typeMismatch("array", "type 'object'")},
		{"ArrayArray", "Array", `[1, 2]`, 19, refusal{}},
		{"ArrayFromDoc", "Array", `{"0": 1}`, nil, typeMismatch("object", "type 'array'")},
		{"BoolTrue", "Bool", `true`, true, refusal{}},
		{"BoolFalse", "Bool", `false`, false, refusal{}},
		{"BoolIntOne", "Bool", `1`, true, refusal{}},
		{"BoolIntZero", "Bool", `0`, false, refusal{}},
		{"BoolNegativeLong", "Bool", `{"$numberLong": "-5"}`, true, refusal{}},
		{"BoolDoubleZero", "Bool", `0.0`, false, refusal{}},
		{"BoolDoubleHalf", "Bool", `0.5`, true, refusal{}},
		{"BoolDoubleNaN", "Bool", `{"$numberDouble": "NaN"}`, true, refusal{}},
		{"BoolDecimalZero", "Bool", `{"$numberDecimal": "0.00"}`, false, refusal{}},
		{"BoolDecimalOne", "Bool", `{"$numberDecimal": "1"}`, true, refusal{}},
		{"BoolNull", "Bool", `null`, false, refusal{}},
		{"BoolUndefined", "Bool", `{"$undefined": true}`, false, refusal{}},
		{"BoolFromString", "Bool", `"true"`, nil, typeMismatch("string", "type 'bool'")},
		{"BoolFromDoc", "Bool", `{}`, nil, typeMismatch("object", "type 'bool'")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := val(t, tc.in)
			var got any
			var err error
			switch tc.fn {
			case "String":
				got, err = args.String("find", "f", v)
			case "Doc":
				var d bsoncore.Document
				d, err = args.Doc("find", "f", v)
				got = len(d)
			case "Array":
				var a bsoncore.Array
				a, err = args.Array("find", "f", v)
				got = len(a)
			case "Bool":
				got, err = args.Bool("find", "f", v)
			}
			checkErr(t, err, tc.err)
			if err == nil && got != tc.want {
				t.Errorf("%s(%s) = %v, want %v", tc.fn, tc.in, got, tc.want)
			}
		})
	}
}

// TestOptionalBool checks that optionalBool takes booleans only, numbers included in what
// it refuses, with MongoDB's message for it.
func TestOptionalBool(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     bool
		err      refusal
	}{
		{"True", `true`, true, refusal{}},
		{"False", `false`, false, refusal{}},
		{"Int", `1`, false, refusal{mongoerr.TypeMismatch, "TypeMismatch", "Field 'singleBatch' should be a boolean value, but found: int"}},
		{"Null", `null`, false, refusal{mongoerr.TypeMismatch, "TypeMismatch", "Field 'singleBatch' should be a boolean value, but found: null"}},
		{"String", `"yes"`, false, refusal{mongoerr.TypeMismatch, "TypeMismatch", "Field 'singleBatch' should be a boolean value, but found: string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := args.OptionalBool("singleBatch", val(t, tc.in))
			checkErr(t, err, tc.err)
			if got != tc.want {
				t.Errorf("OptionalBool(%s) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// TestInt64 checks safeInt64: every number type, truncation of fractions, saturation of
// huge values and infinities, NaN refused with BadValue, other types with TypeMismatch.
func TestInt64(t *testing.T) {
	numbers := "types '[long, int, decimal, double']"
	nan := refusal{mongoerr.BadValue, "BadValue", "BSON field 'find.f' value must be a number, got NaN"}
	for _, tc := range []struct {
		name, in string
		want     int64
		err      refusal
	}{
		{"Int32", `7`, 7, refusal{}},
		{"Int32Zero", `0`, 0, refusal{}},
		{"Int32Negative", `-7`, -7, refusal{}},
		{"Int32Min", `-2147483648`, math.MinInt32, refusal{}},
		{"Int64Max", `{"$numberLong": "9223372036854775807"}`, math.MaxInt64, refusal{}},
		{"Int64Min", `{"$numberLong": "-9223372036854775808"}`, math.MinInt64, refusal{}},
		{"DoubleWhole", `5.0`, 5, refusal{}},
		{"DoubleFractionTruncated", `2.7`, 2, refusal{}},
		{"DoubleNegativeFractionTruncated", `-2.7`, -2, refusal{}},
		{"DoubleNegativeZero", `-0.0`, 0, refusal{}},
		{"DoubleHugeSaturates", `1e300`, math.MaxInt64, refusal{}},
		{"DoubleHugeNegativeSaturates", `-1e300`, math.MinInt64, refusal{}},
		{"DoubleTwoToThe63Saturates", `9223372036854775808.0`, math.MaxInt64, refusal{}},
		{"DoubleInfinity", `{"$numberDouble": "Infinity"}`, math.MaxInt64, refusal{}},
		{"DoubleNegativeInfinity", `{"$numberDouble": "-Infinity"}`, math.MinInt64, refusal{}},
		{"DoubleNaN", `{"$numberDouble": "NaN"}`, 0, nan},
		{"Decimal", `{"$numberDecimal": "42"}`, 42, refusal{}},
		{"DecimalFraction", `{"$numberDecimal": "42.9"}`, 42, refusal{}},
		{"DecimalNaN", `{"$numberDecimal": "NaN"}`, 0, nan},
		{"DecimalHuge", `{"$numberDecimal": "1E+40"}`, math.MaxInt64, refusal{}},
		{"String", `"5"`, 0, typeMismatch("string", numbers)},
		{"Bool", `true`, 0, typeMismatch("bool", numbers)},
		{"Null", `null`, 0, typeMismatch("null", numbers)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := args.Int64("find", "f", val(t, tc.in))
			checkErr(t, err, tc.err)
			if got != tc.want {
				t.Errorf("Int64(%s) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

// TestCollection checks the collection name of a command's first field: a non-empty
// string, InvalidNamespace otherwise, whose message depends on whether the command also
// takes a collection UUID there.
func TestCollection(t *testing.T) {
	for _, tc := range []struct {
		name, cmd, in, want string
		err                 refusal
	}{
		{"Name", "find", `"c"`, "c", refusal{}},
		{"Dotted", "insert", `"a.b"`, "a.b", refusal{}},
		{"Empty", "find", `""`, "", refusal{mongoerr.InvalidNamespace, "InvalidNamespace", "Invalid namespace specified ''"}},
		{"FindInt", "find", `1`, "", refusal{mongoerr.InvalidNamespace, "InvalidNamespace", "Failed to parse namespace element"}},
		{"CountNull", "count", `null`, "", refusal{mongoerr.InvalidNamespace, "InvalidNamespace", "Failed to parse namespace element"}},
		{"DistinctObject", "distinct", `{}`, "", refusal{mongoerr.InvalidNamespace, "InvalidNamespace", "Failed to parse namespace element"}},
		{"InsertInt", "insert", `1`, "", refusal{mongoerr.InvalidNamespace, "InvalidNamespace", "collection name has invalid type int"}},
		{"DropNull", "drop", `null`, "", refusal{mongoerr.InvalidNamespace, "InvalidNamespace", "collection name has invalid type null"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := args.Collection(tc.cmd, val(t, tc.in))
			checkErr(t, err, tc.err)
			if got != tc.want {
				t.Errorf("Collection(%s) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestErrorConstructors checks Missing and WrongType, whose type list is singular for one
// type and bracketed for several.
func TestErrorConstructors(t *testing.T) {
	checkErr(t, args.Missing("insert", "documents"),
		refusal{mongoerr.Location40414, "Location40414", "BSON field 'insert.documents' is missing but a required field"})
	checkErr(t, args.WrongType("insert", "ordered", bsoncore.TypeString, "bool"),
		refusal{mongoerr.TypeMismatch, "TypeMismatch", "BSON field 'insert.ordered' is the wrong type 'string', expected type 'bool'"})
	checkErr(t, args.WrongType("find", "limit", bsoncore.TypeArray, args.NumberTypes...),
		refusal{mongoerr.TypeMismatch, "TypeMismatch", "BSON field 'find.limit' is the wrong type 'array', expected types '[long, int, decimal, double']"})
}

// TestForEach checks the walk over a command body: the command name and the generic
// arguments are skipped, the others reach fn in order, an unknown field fails with 40415,
// fn's error stops the walk, and ForEachMaxTime returns the first maxTimeMS.
func TestForEach(t *testing.T) {
	stop := errors.New("stop")
	for _, tc := range []struct {
		name, body string
		known      []string // the fields fn knows
		failOn     string   // the field fn fails on
		seen       []string
		maxTime    int32 // 0: none returned
		err        refusal
		wantErr    error
	}{
		{"Empty", `{}`, nil, "", nil, 0, refusal{}, nil},
		{"CommandOnly", `{"find": "c"}`, nil, "", nil, 0, refusal{}, nil},
		{"KnownInOrder", `{"find": "c", "filter": {}, "limit": 1, "myOpt": 2}`, []string{"filter", "limit", "myOpt"}, "",
			[]string{"filter", "limit", "myOpt"}, 0, refusal{}, nil},
		{"GenericSkipped", `{"find": "c", "lsid": {}, "$db": "db", "comment": "x", "readConcern": {}, "txnNumber": 1, "filter": {}}`,
			[]string{"filter"}, "", []string{"filter"}, 0, refusal{}, nil},
		{"MaxTimeFirst", `{"find": "c", "maxTimeMS": 5, "maxTimeMS": 9}`, nil, "", nil, 5, refusal{}, nil},
		{"UnknownInterned", `{"find": "c", "filter": {}, "limit": 1}`, []string{"filter"}, "", []string{"filter", "limit"}, 0,
			refusal{mongoerr.Location40415, "Location40415", "BSON field 'find.limit' is an unknown field."}, nil},
		{"UnknownOther", `{"find": "c", "bogus": 1, "filter": {}}`, []string{"filter"}, "", []string{"bogus"}, 0,
			refusal{mongoerr.Location40415, "Location40415", "BSON field 'find.bogus' is an unknown field."}, nil},
		{"FnErrorStops", `{"find": "c", "filter": {}, "sort": {}}`, []string{"filter", "sort"}, "filter", []string{"filter"}, 0,
			refusal{}, stop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			mt, err := args.ForEachMaxTime("find", doc(t, tc.body), func(key string, _ bsoncore.Value) (bool, error) {
				seen = append(seen, key)
				if key == tc.failOn {
					return true, stop
				}
				for _, k := range tc.known {
					if k == key {
						return true, nil
					}
				}
				return false, nil
			})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
			} else {
				checkErr(t, err, tc.err)
			}
			if len(seen) != len(tc.seen) {
				t.Fatalf("fn saw %v, want %v", seen, tc.seen)
			}
			for i := range seen {
				if seen[i] != tc.seen[i] {
					t.Fatalf("fn saw %v, want %v", seen, tc.seen)
				}
			}
			if got, _ := mt.Int32OK(); got != tc.maxTime {
				t.Errorf("maxTimeMS %d (type %v), want %d", got, mt.Type, tc.maxTime)
			}
			if err2 := args.ForEach("find", doc(t, tc.body), func(string, bsoncore.Value) (bool, error) { return true, nil }); err2 != nil {
				t.Errorf("ForEach accepting every field: %v", err2)
			}
		})
	}
}

// TestGeneric checks that the generic arguments include those drivers send with every
// command, and not command-specific ones.
func TestGeneric(t *testing.T) {
	for _, k := range []string{"$db", "lsid", "$clusterTime", "txnNumber", "maxTimeMS", "comment", "apiVersion", "writeConcern", "readConcern"} {
		if !args.Generic[k] {
			t.Errorf("%s is not generic", k)
		}
	}
	for _, k := range []string{"filter", "documents", "ordered", "find"} {
		if args.Generic[k] {
			t.Errorf("%s is generic", k)
		}
	}
}
