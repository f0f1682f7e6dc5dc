package match

import (
	"errors"
	"testing"

	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestMatch(t *testing.T) {
	for _, tc := range matchCases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(doc(t, tc.filter), nil)
			if err != nil {
				t.Fatalf("Compile(%s): %v", tc.filter, err)
			}
			d := doc(t, tc.doc)
			if got := f.Match(d); got != tc.want {
				t.Errorf("Match(%s, %s) = %v, want %v", tc.filter, tc.doc, got, tc.want)
			}
			ok, err := f.MatchErr(d)
			if ok != tc.want || err != nil {
				t.Errorf("MatchErr = %v, %v", ok, err)
			}
			if ok, _ := f.MatchPos(d); ok != tc.want {
				t.Errorf("MatchPos ok = %v", ok)
			}
		})
	}
}

// posCase checks MatchPos: the array position the positional $ operator refers to.
type posCase struct {
	name    string
	filter  string
	doc     string
	wantOK  bool
	wantPos int
}

var posCases = []posCase{
	{"NoArray", `{"a": 1}`, `{"a": 1}`, true, -1},
	{"LeafElement", `{"grades": {"$gte": 85}}`, `{"grades": [80, 85, 90]}`, true, 1},
	{"LeafWholeArray", `{"a": [1, 2]}`, `{"a": [1, 2]}`, true, -1},
	{"ArrayOfDocs", `{"grades.grade": 85}`, `{"grades": [{"grade": 80}, {"grade": 85}]}`, true, 1},
	{"OutermostWins", `{"a.b": 2}`, `{"a": [{"b": [1, 2]}, {"b": [2]}]}`, true, 0},
	{"ExplicitIndexNoOffset", `{"a.1": 5}`, `{"a": [4, 5]}`, true, -1},
	{"ExplicitIndexThenImplicit", `{"a.0.b": 2}`, `{"a": [[{"b": 1}, {"b": 2}]]}`, true, 1},
	{"ElemMatchTop", `{"a": {"$elemMatch": {"x": 2}}}`, `{"a": [{"x": 1}, {"x": 2}]}`, true, 1},
	{"ElemMatchValue", `{"a": {"$elemMatch": {"$gt": 5}}}`, `{"a": [1, 9]}`, true, 1},
	{"ElemMatchUnderArray", `{"a.b": {"$elemMatch": {"$gt": 5}}}`, `{"a": [{"b": [1]}, {"b": [1, 9]}]}`, true, 1},
	{"AndLastWins", `{"a": 2, "b": 3}`, `{"a": [1, 2], "b": [3, 4]}`, true, 0},
	{"AndKeepsEarlier", `{"a": 2, "c": 1}`, `{"a": [1, 2], "c": 1}`, true, 1},
	{"OrRecordsNone", `{"$or": [{"a": 2}, {"b": 1}]}`, `{"a": [1, 2]}`, true, -1},
	{"NotRecordsNone", `{"a": {"$ne": 3}}`, `{"a": [1, 2]}`, true, -1},
	{"NoMatch", `{"a": 3}`, `{"a": [1, 2]}`, false, -1},
	{"AndFlattened", `{"$and": [{"a": 2}, {"b": 4}]}`, `{"a": [1, 2], "b": [3, 4]}`, true, 1},
	{"NullMissingInArrayDoc", `{"a.b": null}`, `{"a": [{"b": 1}, {}]}`, true, 1},
}

func TestMatchPos(t *testing.T) {
	for _, tc := range posCases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(doc(t, tc.filter), nil)
			if err != nil {
				t.Fatal(err)
			}
			ok, pos := f.MatchPos(doc(t, tc.doc))
			if ok != tc.wantOK || pos != tc.wantPos {
				t.Errorf("MatchPos(%s, %s) = %v, %d; want %v, %d", tc.filter, tc.doc, ok, pos, tc.wantOK, tc.wantPos)
			}
		})
	}
}

// errCase is a filter Compile refuses, with MongoDB's code and message.
type errCase struct {
	name   string
	filter string
	code   mongoerr.Code
	msg    string
}

var errCases = []errCase{
	{"UnknownTop", `{"$foo": 1}`, 2, "unknown top level operator: $foo. If you have a field name that starts with a '$' symbol, consider using $getField or $setField."},
	{"TopLevelMod", `{"$mod": [1, 1]}`, 2, "unknown top level operator: $mod. If you have a field name that starts with a '$' symbol, consider using $getField or $setField."},
	{"TopLevelNot", `{"$not": {"a": 1}}`, 2, "unknown top level operator: $not. If you are trying to negate an entire expression, use $nor."},
	{"UnknownOperator", `{"a": {"$foo": 1}}`, 2, "unknown operator: $foo"},
	{"FieldAfterOperator", `{"a": {"$gt": 1, "b": 2}}`, 2, "unknown operator: b"},
	{"AndNotArray", `{"$and": {"a": 1}}`, 2, "$and must be an array"},
	{"OrEmpty", `{"$or": []}`, 2, "$and/$or/$nor must be a nonempty array"},
	{"NorEntryNotObject", `{"$nor": [1]}`, 2, "$or/$and/$nor entries need to be full objects"},
	{"InNotArray", `{"a": {"$in": 1}}`, 2, "$in needs an array"},
	{"NinNotArray", `{"a": {"$nin": {"b": 1}}}`, 2, "$nin needs an array"},
	{"InNested", `{"a": {"$in": [{"$gt": 1}]}}`, 2, "cannot nest $ under $in"},
	{"NotNotDoc", `{"a": {"$not": 1}}`, 2, "$not needs a regex or a document"},
	{"NotEmpty", `{"a": {"$not": {}}}`, 2, "$not cannot be empty"},
	{"NotFieldInside", `{"a": {"$not": {"b": 1}}}`, 2, "unknown operator: b"},
	{"SizeNotNumber", `{"a": {"$size": {"$gt": 1}}}`, 2, "$size needs a number"},
	{"SizeFraction", `{"a": {"$size": 2.1}}`, 2, "$size must be a whole number"},
	{"SizeNaN", `{"a": {"$size": {"$numberDouble": "NaN"}}}`, 2, "$size must be a whole number"},
	{"SizeInf", `{"a": {"$size": {"$numberDouble": "Infinity"}}}`, 2, "$size must be a whole number"},
	{"SizeNegative", `{"a": {"$size": -1}}`, 2, "$size may not be negative"},
	{"SizeLongTooBig", `{"a": {"$size": {"$numberLong": "4294967296"}}}`, 2, "$size must be representable as a 32-bit integer"},
	{"ModNotArray", `{"a": {"$mod": 1}}`, 2, "malformed mod, needs to be an array"},
	{"ModEmpty", `{"a": {"$mod": []}}`, 2, "malformed mod, not enough elements"},
	{"ModOne", `{"a": {"$mod": [1]}}`, 2, "malformed mod, not enough elements"},
	{"ModThree", `{"a": {"$mod": [1, 2, 3]}}`, 2, "malformed mod, too many elements"},
	{"ModDivisorString", `{"a": {"$mod": ["1", 2]}}`, 2, "malformed mod, divisor not a number"},
	{"ModRemainderString", `{"a": {"$mod": [1, "2"]}}`, 2, "malformed mod, remainder not a number"},
	{"ModDivisorNull", `{"a": {"$mod": [null, 3]}}`, 2, "malformed mod, divisor not a number"},
	{"ModZero", `{"a": {"$mod": [0, 1]}}`, 2, "divisor cannot be 0"},
	{"ModTinyDivisor", `{"a": {"$mod": [5e-324, 1]}}`, 2, "divisor cannot be 0"},
	{"ModNaN", `{"a": {"$mod": [{"$numberDouble": "NaN"}, 1]}}`, 2, "malformed mod, divisor value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type"},
	{"ModRemainderInf", `{"a": {"$mod": [1, {"$numberDouble": "-Infinity"}]}}`, 2, "malformed mod, remainder value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type"},
	{"ModDivisorHuge", `{"a": {"$mod": [1.79769e+307, 0]}}`, 2, "malformed mod, divisor value is invalid :: caused by :: Out of bounds coercing to integral value"},
	{"TypeBadCode", `{"a": {"$type": 42}}`, 2, "Invalid numerical type code: 42"},
	{"TypeBadAlias", `{"a": {"$type": "float"}}`, 2, "Unknown type name alias: float"},
	{"TypeArrayBadCode", `{"a": {"$type": ["binData", -123]}}`, 2, "Invalid numerical type code: -123"},
	{"TypeNaN", `{"a": {"$type": ["binData", {"$numberDouble": "NaN"}]}}`, 2, "Invalid numerical type code: nan"},
	{"TypeInf", `{"a": {"$type": {"$numberDouble": "-Infinity"}}}`, 2, "Invalid numerical type code: -inf"},
	{"TypeFraction", `{"a": {"$type": -1.123}}`, 2, "Invalid numerical type code: -1.123"},
	{"TypeEmpty", `{"a": {"$type": []}}`, 9, "$type must match at least one type"},
	{"TypeWrongType", `{"a": {"$type": true}}`, 14, "type must be represented as a number or a string"},
	{"RegexBadFlag", `{"a": {"$regex": {"$regularExpression": {"pattern": "foo", "options": "123"}}}}`, 51108, " invalid flag in regex options: 1"},
	{"RegexBadOption", `{"a": {"$regex": "foo", "$options": "g"}}`, 51108, " invalid flag in regex options: g"},
	{"RegexValueBadFlag", `{"a": {"$regularExpression": {"pattern": "foo", "options": "g"}}}`, 51108, " invalid flag in regex options: g"},
	{"RegexInvalid", `{"a": {"$regex": "g[-z+ng  wrong regex"}}`, 51091, "Regular expression is invalid: missing terminating ] for character class"},
	{"RegexUnmatchedParen", `{"a": {"$regex": ")"}}`, 51091, "Regular expression is invalid: unmatched closing parenthesis"},
	{"RegexTrailingBackslash", `{"a": {"$regex": "abc\\"}}`, 51091, "Regular expression is invalid: \\ at end of pattern"},
	{"RegexNothingToRepeat", `{"a": {"$regex": "*"}}`, 51091, "Regular expression is invalid: quantifier does not follow a repeatable item"},
	{"RegexRangeOrder", `{"a": {"$regex": "[z-a]"}}`, 51091, "Regular expression is invalid: range out of order in character class"},
	{"RegexLookahead", `{"a": {"$regex": "a(?=b)"}}`, 51091, "Regular expression is invalid: lookaround assertion is not supported"},
	{"RegexBackref", `{"a": {"$regex": "(a)\\1"}}`, 51091, "Regular expression is invalid: back reference is not supported"},
	{"RegexPossessive", `{"a": {"$regex": "a++"}}`, 51091, "Regular expression is invalid: possessive quantifier is not supported"},
	{"RegexAtomic", `{"a": {"$regex": "(?>a)"}}`, 51091, "Regular expression is invalid: (?> group is not supported"},
	{"RegexNotString", `{"a": {"$regex": 1}}`, 2, "$regex has to be a string"},
	{"OptionsNotString", `{"a": {"$regex": "a", "$options": 1}}`, 2, "$options has to be a string"},
	{"OptionsAlone", `{"a": {"$options": "i"}}`, 2, "$options needs a $regex"},
	{"OptionsTwiceRegexFirst", `{"a": {"$regex": {"$regularExpression": {"pattern": "a", "options": "m"}}, "$options": "i"}}`, 51075, "options set in both $regex and $options"},
	{"OptionsTwiceOptionsFirst", `{"a": {"$options": "i", "$regex": {"$regularExpression": {"pattern": "a", "options": "m"}}}}`, 51074, "options set in both $regex and $options"},
	{"RegexNullByte", `{"a": {"$regex": "a\u0000b"}}`, 51095, "Regular expression cannot contain an embedded null byte"},
	{"GtRegex", `{"a": {"$gt": {"$regularExpression": {"pattern": "a", "options": ""}}}}`, 2, "Can't have RegEx as arg to predicate over field 'a'."},
	{"NeRegex", `{"a": {"$ne": {"$regularExpression": {"pattern": "a", "options": ""}}}}`, 2, "Can't have regex as arg to $ne."},
	{"EqUndefined", `{"a": {"$eq": {"$undefined": true}}}`, 2, "cannot compare to undefined"},
	{"PlainUndefined", `{"a": {"$undefined": true}}`, 2, "cannot compare to undefined"},
	{"InUndefined", `{"a": {"$in": [{"$undefined": true}]}}`, 2, "InMatchExpression equality cannot be undefined"},
	{"ElemMatchNotObject", `{"a": {"$elemMatch": 1}}`, 2, "$elemMatch needs an Object"},
	{"AllNotArray", `{"a": {"$all": 1}}`, 2, "$all needs an array"},
	{"AllOperator", `{"a": {"$all": [{"$gt": 1}]}}`, 2, "no $ expressions in $all"},
	{"AllInconsistent", `{"a": {"$all": [{"$elemMatch": {"b": 1}}, 5]}}`, 2, "$all/$elemMatch has to be consistent"},
	{"BitsBadType", `{"a": {"$bitsAllSet": "x"}}`, 2, `$bitsAllSet takes an Array, a number, or a BinData but received: $bitsAllSet: "x"`},
	{"BitsNegativeMask", `{"a": {"$bitsAnySet": -1}}`, 9, "Expected a non-negative number in: $bitsAnySet: -1"},
	{"BitsNegativeLongMask", `{"a": {"$bitsAllClear": {"$numberLong": "-3"}}}`, 9, "Expected a non-negative number in: $bitsAllClear: -3"},
	{"BitsNegativeDoubleMask", `{"a": {"$bitsAllSet": -2.0}}`, 9, "Expected a non-negative number in: $bitsAllSet: -2.0"},
	{"BitsHugeMask", `{"a": {"$bitsAnyClear": 1e20}}`, 9, "Cannot represent as a 64-bit integer: $bitsAnyClear: 1e+20"},
	{"BitsFractionMask", `{"a": {"$bitsAnySet": 1.5}}`, 9, "Expected an integer: $bitsAnySet: 1.5"},
	{"BitsNegativePosition", `{"a": {"$bitsAllClear": [-1]}}`, 2, "bit positions must be >= 0 but got: 0: -1"},
	{"BitsPositionString", `{"a": {"$bitsAllClear": ["x"]}}`, 2, `bit positions must be an integer but got: 0: "x"`},
	{"ExprNoCompiler", `{"$expr": {"$eq": ["$a", 1]}}`, 224, "$expr is not allowed in this context"},
	{"ExprInElemMatch", `{"a": {"$elemMatch": {"$expr": {"$eq": ["$b", 1]}}}}`, 2, "$expr can only be applied to the top-level document"},
	{"Where", `{"$where": "this.a == 1"}`, 2, "$where is not allowed in this context"},
	{"WhereOnField", `{"a": {"$where": "x"}}`, 2, "$where cannot be applied to a field"},
	{"TextTwice", `{"$and": [{"$text": {"$search": "x"}}, {"$text": {"$search": "y"}}]}`, 2, "Too many text expressions"},
	{"TextInNor", `{"$nor": [{"$text": {"$search": "x"}}]}`, 2, "text expression not allowed in nor"},
	{"TextInElemMatch", `{"a": {"$elemMatch": {"$text": {"$search": "x"}}}}`, 2, "$text can only be applied to the top-level document"},
	{"JSONSchemaNotObject", `{"$jsonSchema": 1}`, 14, "$jsonSchema must be an object"},
	{"JSONSchemaUnknown", `{"$jsonSchema": {"foo": 1}}`, 9, "Unknown $jsonSchema keyword: foo"},
	{"JSONSchemaRef", `{"$jsonSchema": {"$ref": "#/x"}}`, 9, "$jsonSchema keyword '$ref' is not currently supported"},
	{"JSONSchemaInteger", `{"$jsonSchema": {"properties": {"a": {"type": "integer"}}}}`, 9, "$jsonSchema type 'integer' is not currently supported."},
	{"JSONSchemaBadAlias", `{"$jsonSchema": {"properties": {"a": {"bsonType": "float"}}}}`, 2, "Unknown type name alias: float"},
	{"JSONSchemaMinimumType", `{"$jsonSchema": {"minimum": "x"}}`, 14, "$jsonSchema keyword 'minimum' must be a number"},
	{"JSONSchemaRequiredEmpty", `{"$jsonSchema": {"required": []}}`, 9, "$jsonSchema keyword 'required' cannot be an empty array"},
	{"JSONSchemaTopType", `{"$jsonSchema": {"bsonType": "string"}}`, 9, "$jsonSchema keyword 'bsonType' must be a type that allows objects at the top level"},
	{"JSONSchemaExclusiveAlone", `{"$jsonSchema": {"properties": {"a": {"exclusiveMinimum": true}}}}`, 9, "$jsonSchema keyword 'minimum' must be a present if exclusiveMinimum is present"},
	{"NearNotTopLevel", `{"$or": [{"loc": {"$near": [0, 0]}}, {"a": 1}]}`, 2, "geoNear must be top-level expr"},
	{"NearTwice", `{"a": {"$near": [0, 0]}, "b": {"$nearSphere": [0, 0]}}`, 2, "Too many geoNear expressions"},
	{"NearNegativeMax", `{"a": {"$near": [0, 0], "$maxDistance": -1}}`, 16896, "$maxDistance must be non-negative"},
	{"NearNoGeometry", `{"a": {"$near": {"$maxDistance": 1}}}`, 2, "$geometry is required for geo near query"},
	{"NearSphereOutOfBounds", `{"a": {"$nearSphere": [200, 0]}}`, 2, "Legacy point is out of bounds for spherical query"},
	{"GeoWithinPoint", `{"loc": {"$geoWithin": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}}`, 2,
		`$within not supported with provided geometry: { $geoWithin: { $geometry: { type: "Point", coordinates: [ 0, 0 ] } } }`},
	{"GeoWithinNotObject", `{"loc": {"$geoWithin": 1}}`, 2, "geometry must be an object"},
	{"GeoPointNotNumeric", `{"loc": {"$geoWithin": {"$geometry": {"type": "Point", "coordinates": ["a", 0]}}}}`, 2,
		"Point must only contain numeric elements, instead got type string"},
	{"GeoLegacyEmpty", `{"loc": {"$geoIntersects": {"$geometry": []}}}`, 2, "Point must only contain numeric elements, instead got type missing"},
	{"GeoUnknownSpecifier", `{"loc": {"$geoWithin": {"$foo": [1]}}}`, 2, "unknown geo specifier: $foo: [ 1 ]"},
	{"GeoUnknownType", `{"loc": {"$geoWithin": {"$geometry": {}}}}`, 2, "unknown GeoJSON type: {}"},
	{"GeoNoShape", `{"loc": {"$geoWithin": {}}}`, 2, "geo query doesn't have any geometry"},
	{"GeoLoopNotClosed", `{"loc": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 2], [2, 3]]]}}}}`, 2,
		"Loop is not closed, first vertex does not equal last vertex: [ [ 0, 0 ], [ 1, 2 ], [ 2, 3 ] ]"},
	{"GeoOutOfBounds", `{"loc": {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": [200, 0]}}}}`, 2,
		"longitude/latitude is out of bounds, lng: 200 lat: 0"},
	{"GeoIntersectsBox", `{"loc": {"$geoIntersects": {"$box": [[0, 0], [1, 1]]}}}`, 2,
		"$geoIntersect not supported with provided geometry: { $geoIntersects: { $box: [ [ 0, 0 ], [ 1, 1 ] ] } }"},
	{"GeoNegativeRadius", `{"loc": {"$geoWithin": {"$center": [[0, 0], -1]}}}`, 2, "radius must be a non-negative number"},
	{"GeoTwoShapes", `{"loc": {"$geoWithin": {"$box": [[0, 0], [1, 1]], "$center": [[0, 0], 1]}}}`, 2,
		"$geoWithin doesn't accept multiple shapes $geoWithin: { $box: [ [ 0, 0 ], [ 1, 1 ] ], $center: [ [ 0, 0 ], 1 ] }"},
	{"GeoExtraField", `{"loc": {"$geoWithin": {"$box": [[0, 0], [1, 1]]}, "$exists": true}}`, 2, "can't parse extra field: $exists: true"},
	{"GeoPolygonTwoPoints", `{"loc": {"$geoWithin": {"$polygon": [[0, 0], [1, 1]]}}}`, 2, "Polygon must have at least 3 points"},
	{"AlwaysTrueTwo", `{"$alwaysTrue": 2}`, 9, "$alwaysTrue must be an integer value of 1"},
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(doc(t, tc.filter), nil)
			var me *mongoerr.Error
			if !errors.As(err, &me) {
				t.Fatalf("Compile(%s) error = %v, want *mongoerr.Error", tc.filter, err)
			}
			if me.Code != tc.code || me.Message != tc.msg {
				t.Errorf("Compile(%s) = %d %q, want %d %q", tc.filter, me.Code, me.Message, tc.code, tc.msg)
			}
		})
	}
}

func TestCompileInvalidBSON(t *testing.T) {
	_, err := Compile(bsoncore.Document{7, 0, 0, 0, 0}, nil)
	if me := mongoerr.As(err); me == nil || me.Code != mongoerr.InvalidBSON {
		t.Fatalf("err = %v, want InvalidBSON", err)
	}
}

func TestMatchExpr(t *testing.T) {
	boom := errors.New("boom")
	opts := &Options{Expr: func(expr bsoncore.Value) (func(bsoncore.Document) (bool, error), error) {
		want := string(strBytes(expr.Document().Lookup("field").Data))
		return func(d bsoncore.Document) (bool, error) {
			v, ok := lookup(d, want)
			if !ok {
				return false, boom
			}
			return trueValue(v), nil
		}, nil
	}}
	f, err := Compile(doc(t, `{"a": 1, "$expr": {"field": "b"}}`), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !f.HasExpr() {
		t.Error("HasExpr = false")
	}
	for _, tc := range []struct {
		doc     string
		want    bool
		wantErr bool
	}{
		{`{"a": 1, "b": true}`, true, false},
		{`{"a": 1, "b": false}`, false, false},
		{`{"a": 2, "b": true}`, false, false},
		{`{"a": 1}`, false, true},
	} {
		ok, err := f.MatchErr(doc(t, tc.doc))
		if ok != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("MatchErr(%s) = %v, %v", tc.doc, ok, err)
		}
		if f.Match(doc(t, tc.doc)) != tc.want {
			t.Errorf("Match(%s) != %v", tc.doc, tc.want)
		}
	}
}

func TestFilterPathsAndEmpty(t *testing.T) {
	for _, tc := range []struct {
		filter string
		paths  []string
		empty  bool
	}{
		{`{}`, nil, true},
		{`{"$comment": "x"}`, nil, true},
		{`{"a": 1, "b.c": {"$gt": 1}}`, []string{"a", "b.c"}, false},
		{`{"$or": [{"a": 1}, {"x": 2}], "a": 3}`, []string{"a", "x"}, false},
		{`{"a": {"$elemMatch": {"b": 1, "c": {"$elemMatch": {"d": 1}}}}}`, []string{"a", "a.b", "a.c", "a.c.d"}, false},
	} {
		f, err := Compile(doc(t, tc.filter), nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.IsEmpty() != tc.empty {
			t.Errorf("%s: IsEmpty = %v", tc.filter, f.IsEmpty())
		}
		got := f.Paths()
		if len(got) != len(tc.paths) {
			t.Fatalf("%s: Paths = %q, want %q", tc.filter, got, tc.paths)
		}
		for i := range got {
			if got[i] != tc.paths[i] {
				t.Errorf("%s: Paths = %q, want %q", tc.filter, got, tc.paths)
			}
		}
	}
}
