package ddl_test

import (
	"testing"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// specShell renders an index as listIndexes reports it, in shell notation.
func specShell(x *store.Index) string {
	return bsonx.ShellString(bsonx.DocValue(catalog.IndexSpecDoc(x)))
}

// TestParseIndexSpec checks createIndexes' index specifications: the name generated when
// none is given, the options kept (in the client's order) or dropped, and every refusal
// with MongoDB's code and message.
func TestParseIndexSpec(t *testing.T) {
	for _, tc := range []struct {
		name, spec    string
		want          string // listIndexes' form of the index
		code          mongoerr.Code
		codeName, msg string
	}{
		{"Named", `{"key": {"a": 1}, "name": "x", "v": 2}`, `{ v: 2, key: { a: 1 }, name: "x" }`, 0, "", ""},
		{"DefaultName", `{"key": {"a": 1, "b": -1}}`, `{ v: 2, key: { a: 1, b: -1 }, name: "a_1_b_-1" }`, 0, "", ""},
		{"DefaultNameDouble", `{"key": {"a": 1.5}}`, `{ v: 2, key: { a: 1.5 }, name: "a_1.5" }`, 0, "", ""},
		{"DefaultNameLong", `{"key": {"a": {"$numberLong": "-1"}}}`, `{ v: 2, key: { a: -1 }, name: "a_-1" }`, 0, "", ""},
		{"DefaultNameHashed", `{"key": {"h": "hashed"}}`, `{ v: 2, key: { h: "hashed" }, name: "h_hashed" }`, 0, "", ""},
		{"OptionsKept", `{"unique": true, "key": {"a": 1}, "sparse": 1, "name": "x", "background": true, "dropDups": true, "ns": "db.c"}`,
			`{ v: 2, key: { a: 1 }, name: "x", unique: true, sparse: 1, background: true }`, 0, "", ""},
		{"TTL", `{"key": {"t": 1}, "name": "t", "expireAfterSeconds": 0}`, `{ v: 2, key: { t: 1 }, name: "t", expireAfterSeconds: 0 }`, 0, "", ""},
		{"Partial", `{"key": {"a": 1}, "name": "p", "partialFilterExpression": {"a": {"$gt": 1}}}`,
			`{ v: 2, key: { a: 1 }, name: "p", partialFilterExpression: { a: { $gt: 1 } } }`, 0, "", ""},
		{"SimpleCollation", `{"key": {"a": 1}, "name": "x", "collation": {"locale": "simple"}}`,
			`{ v: 2, key: { a: 1 }, name: "x", collation: { locale: "simple" } }`, 0, "", ""},
		{"NotDocument", `1`, "", mongoerr.TypeMismatch, "TypeMismatch",
			"BSON field 'createIndexes.indexes' is the wrong type 'int', expected type 'object'"},
		{"UnknownField", `{"key": {"a": 1}, "name": "x", "bogus": 1}`, "", mongoerr.InvalidIndexSpecificationOption,
			"InvalidIndexSpecificationOption", "The field 'bogus' is not valid for an index specification. Specification: "},
		{"NoKey", `{"name": "x"}`, "", mongoerr.FailedToParse, "FailedToParse", "The 'key' field is a required property of an index specification"},
		{"KeyNotDocument", `{"key": "a", "name": "x"}`, "", mongoerr.TypeMismatch, "TypeMismatch", "The field 'key' must be an object, but got string"},
		{"NameNotString", `{"key": {"a": 1}, "name": 1}`, "", mongoerr.TypeMismatch, "TypeMismatch", "The field 'name' must be a string, but got int"},
		{"VersionThree", `{"key": {"a": 1}, "name": "x", "v": 3}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex", "cannot create an index with v=3"},
		{"EmptyName", `{"key": {"a": 1}, "name": ""}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex", "The index name cannot be empty"},
		{"StarName", `{"key": {"a": 1}, "name": "*"}`, "", mongoerr.BadValue, "BadValue", "The index name '*' is not valid."},
		{"EmptyKey", `{"key": {}, "name": "x"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex", "Index keys cannot be empty."},
		{"EmptyKeyUnnamed", `{"key": {}}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex", "Index keys cannot be empty."},
		{"EmptyField", `{"key": {"": 1}, "name": "x"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex", "Index keys cannot be an empty field."},
		{"EmptyPathPart", `{"key": {"a..b": 1}, "name": "x"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Index keys cannot contain an empty field."},
		{"DollarField", `{"key": {"a.$b": 1}, "name": "x"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Index key contains an illegal field name: field name starts with '$'."},
		{"ZeroDirection", `{"key": {"a": 0}, "name": "x"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Values in the index key pattern must not be zero, but found 0 for field 'a'"},
		{"NaNDirection", `{"key": {"a": {"$numberDouble": "NaN"}}, "name": "x"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Values in the index key pattern must not be zero"},
		{"BoolDirection", `{"key": {"a": true}, "name": "x"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Values in v:2 index key pattern cannot be of type bool. Only numbers > 0, numbers < 0, and strings are allowed."},
		{"TextNotAdjacent", `{"key": {"a": "text", "b": 1, "c": "text"}, "name": "x"}`, "", 17389, "Location17389", "'text' fields in index must all be adjacent"},
		{"TextBadLanguage", `{"key": {"a": "text"}, "name": "x", "default_language": "klingon"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex", "unsupported language: \"klingon\" for text index version 3"},
		{"TextWeightNotNumber", `{"key": {"a": "text"}, "name": "x", "weights": {"a": "x"}}`, "", 17283, "Location17283", "weight for text index needs numeric type"},
		{"UnknownPlugin", `{"key": {"a": "foo"}, "name": "x"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex", "Unknown index plugin 'foo'"},
		{"TwoHashed", `{"key": {"a": "hashed", "b": "hashed"}, "name": "x"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"A maximum of one index field is allowed to be hashed but found 2 for 'key' "},
		{"HashedUnique", `{"key": {"a": "hashed"}, "name": "x", "unique": true}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Currently hashed indexes cannot guarantee uniqueness. Use a regular index."},
		{"HiddenID", `{"key": {"_id": 1}, "name": "x", "hidden": true}`, "", mongoerr.BadValue, "BadValue", "can't hide _id index"},
		{"ReservedIDName", `{"key": {"a": 1}, "name": "_id_"}`, "", mongoerr.BadValue, "BadValue",
			"The index name '_id_' is reserved for the _id index, which must have key pattern {_id: 1}"},
		{"HiddenNotBool", `{"key": {"a": 1}, "name": "x", "hidden": 1}`, "", mongoerr.TypeMismatch, "TypeMismatch",
			"The field 'name' must be a bool, but got int"},
		{"UniqueNotBool", `{"key": {"a": 1}, "name": "x", "unique": "yes"}`, "", mongoerr.TypeMismatch, "TypeMismatch",
			"The field 'unique' must be a bool, but got string"},
		{"PartialNotDocument", `{"key": {"a": 1}, "name": "x", "partialFilterExpression": 1}`, "", mongoerr.TypeMismatch, "TypeMismatch",
			"The field 'partialFilterExpression' must be an object, but got int"},
		{"PartialInvalid", `{"key": {"a": 1}, "name": "x", "partialFilterExpression": {"$bogus": 1}}`, "", mongoerr.BadValue, "BadValue", "$bogus"},
		{"TTLNotNumber", `{"key": {"a": 1}, "name": "x", "expireAfterSeconds": "1"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"TTL index 'expireAfterSeconds' option must be numeric, but received a type of 'string'"},
		{"TTLNegative", `{"key": {"a": 1}, "name": "x", "expireAfterSeconds": -1}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number"},
		{"TTLHuge", `{"key": {"a": 1}, "name": "x", "expireAfterSeconds": 2147483648.0}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number"},
		{"TTLNaN", `{"key": {"a": 1}, "name": "x", "expireAfterSeconds": {"$numberDouble": "NaN"}}`, "", mongoerr.CannotCreateIndex,
			"CannotCreateIndex", "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number"},
		{"Clustered", `{"key": {"_id": 1}, "name": "x", "clustered": true}`, "", mongoerr.NotImplemented, "NotImplemented",
			"clustered indexes are not supported by cleave"},
		{"TextOption", `{"key": {"a": 1}, "name": "x", "weights": {"a": 1}}`, "", mongoerr.InvalidIndexSpecificationOption, "InvalidIndexSpecificationOption",
			"Index key pattern { a: 1 } must include a 'text' field to use the 'weights' option"},
		{"TextFixed", `{"key": {"a": "text", "b": 1}, "name": "x", "weights": {"c": 2.5}}`,
			`{ v: 2, key: { _fts: "text", _ftsx: 1, b: 1 }, name: "x", weights: { a: 1, c: 2 }, default_language: "english", language_override: "language", textIndexVersion: 3 }`, 0, "", ""},
		{"Wildcard", `{"key": {"$**": 1}, "name": "w"}`, `{ v: 2, key: { $**: 1 }, name: "w" }`, 0, "", ""},
		{"WildcardSubtree", `{"key": {"a.$**": -1}, "name": "w"}`, `{ v: 2, key: { a.$**: -1 }, name: "w" }`, 0, "", ""},
		{"WildcardProjection", `{"key": {"$**": 1}, "name": "w", "wildcardProjection": {"a": 1}}`,
			`{ v: 2, key: { $**: 1 }, name: "w", wildcardProjection: { a: 1 } }`, 0, "", ""},
		{"WildcardString", `{"key": {"$**": "x"}, "name": "w"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"The key pattern value for an '$**' index must be a non-zero number, not a string."},
		{"WildcardZero", `{"key": {"$**": 0}, "name": "w"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex", "Values in the index key pattern cannot be 0."},
		{"WildcardUnique", `{"key": {"$**": 1}, "name": "w", "unique": true}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Index type 'wildcard' does not support the 'unique' option"},
		{"WildcardTTL", `{"key": {"$**": 1}, "name": "w", "expireAfterSeconds": 5}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"cannot make a TTL index :: caused by :: Index type 'wildcard' does not support the 'expireAfterSeconds' option"},
		{"ProjectionNotWildcard", `{"key": {"a": 1}, "name": "w", "wildcardProjection": {"a": 1}}`, "", mongoerr.BadValue, "BadValue",
			"The field 'wildcardProjection' is only allowed in 'wildcard' indexes"},
		{"ProjectionOnSubtree", `{"key": {"a.$**": 1}, "name": "w", "wildcardProjection": {"a": 1}}`, "", mongoerr.FailedToParse, "FailedToParse",
			"The field 'wildcardProjection' is only allowed when 'key' is"},
		{"ProjectionEmpty", `{"key": {"$**": 1}, "name": "w", "wildcardProjection": {}}`, "", mongoerr.FailedToParse, "FailedToParse",
			"The 'wildcardProjection' field can't be an empty object"},
		{"WildcardHashed", `{"key": {"$**": 1, "h": "hashed"}, "name": "w"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Can't use more than one index plugin for a single index."},
		{"CompoundWildcard", `{"key": {"a.$**": 1, "b": 1}, "name": "w"}`, `{ v: 2, key: { a.$**: 1, b: 1 }, name: "w" }`, 0, "", ""},
		{"CompoundWildcardAll", `{"key": {"t": 1, "$**": 1}, "name": "w", "wildcardProjection": {"t": 0}}`,
			`{ v: 2, key: { t: 1, $**: 1 }, name: "w", wildcardProjection: { t: 0 } }`, 0, "", ""},
		{"CompoundWildcardNotExcluded", `{"key": {"a": 1, "$**": 1}, "name": "w", "wildcardProjection": {"b": 0}}`, "",
			mongoerr.Location7246209, "Location7246209", "wildcardProjection paths must exclude all regular index fields, however 'a'is not excluded."},
		{"CompoundWildcardNotExcludedLast", `{"key": {"t": 1, "$**": 1}, "name": "w", "wildcardProjection": {"b": 0}}`, "",
			mongoerr.Location7246210, "Location7246210", "wildcardProjection paths must exclude all regular index fields, however 't'is not excluded."},
		{"CompoundWildcardIncludesRegular", `{"key": {"a.b": 1, "$**": 1}, "name": "w", "wildcardProjection": {"a": 1}}`, "",
			mongoerr.Location7246208, "Location7246208", "Index Key and Wildcard Projection cannot contain overlapping fields, however 'a.b' index field is ovverlapping with 'a' wildcardProjection path."},
		{"CompoundWildcardExcludedParent", `{"key": {"a.b": 1, "c": -1, "$**": 1}, "name": "w", "wildcardProjection": {"a": 0, "c": 0}}`,
			`{ v: 2, key: { a.b: 1, c: -1, $**: 1 }, name: "w", wildcardProjection: { a: 0, c: 0 } }`, 0, "", ""},
		{"CompoundWildcardInclusion", `{"key": {"t": 1, "$**": 1}, "name": "w", "wildcardProjection": {"x": 1}}`,
			`{ v: 2, key: { t: 1, $**: 1 }, name: "w", wildcardProjection: { x: 1 } }`, 0, "", ""},
		{"CompoundWildcardSparse", `{"key": {"t": 1, "a.$**": 1}, "name": "w", "sparse": true}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Index type 'wildcard' does not support the 'sparse' option"},
		{"CompoundWildcardUnique", `{"key": {"t": 1, "a.$**": 1}, "name": "w", "unique": true}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Index type 'wildcard' does not support the 'unique' option"},
		{"CompoundTwoWildcards", `{"key": {"a.$**": 1, "b.$**": 1}, "name": "w"}`, "", mongoerr.Location7246201, "Location7246201",
			"Index Key can contain only one wildcard index field"},
		{"CompoundWildcardOverlap", `{"key": {"a.$**": 1, "a.b": 1}, "name": "w"}`, "", mongoerr.Location7246204, "Location7246204",
			"however 'a.b' is overlapping with the wildcard index field."},
		{"CompoundAllFieldsNoProjection", `{"key": {"$**": 1, "b": 1}, "name": "w"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Compound wildcard indexes on all fields must also specify 'wildcardProjection' option"},
		{"Geo", `{"key": {"loc": "2dsphere"}, "name": "g"}`, `{ v: 2, key: { loc: "2dsphere" }, name: "g", 2dsphereIndexVersion: 3 }`, 0, "", ""},
		{"GeoVersionGiven", `{"key": {"loc": "2dsphere", "a": 1}, "name": "g", "2dsphereIndexVersion": 2}`,
			`{ v: 2, key: { loc: "2dsphere", a: 1 }, name: "g", 2dsphereIndexVersion: 2 }`, 0, "", ""},
		{"GeoTwoFields", `{"key": {"a": "2dsphere", "b": "2dsphere"}, "name": "g"}`, "", mongoerr.NotImplemented, "NotImplemented",
			"a 2dsphere index with more than one 2dsphere field is not supported by cleave"},
		{"GeoHashed", `{"key": {"a": "2dsphere", "b": "hashed"}, "name": "g"}`, "", mongoerr.NotImplemented, "NotImplemented",
			"a 2dsphere index with a hashed field is not supported by cleave"},
		{"GeoVersionFour", `{"key": {"a": "2dsphere"}, "name": "g", "2dsphereIndexVersion": 4}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"unsupported geo index version { 2dsphereIndexVersion : 4 }, only support versions: [1,2,3]"},
		{"GeoLevelRange", `{"key": {"a": "2dsphere"}, "name": "g", "coarsestIndexedLevel": 31}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"coarsestIndexedLevel must be an integer between 0 and 30, found 31"},
		{"GeoLevelsOrder", `{"key": {"a": "2dsphere"}, "name": "g", "coarsestIndexedLevel": 10, "finestIndexedLevel": 5}`, "",
			mongoerr.CannotCreateIndex, "CannotCreateIndex", "finestIndexedLevel must be greater than coarsestIndexedLevel"},
		{"TwoD", `{"key": {"loc": "2d"}}`, `{ v: 2, key: { loc: "2d" }, name: "loc_2d" }`, 0, "", ""},
		{"TwoDOptions", `{"key": {"loc": "2d", "a": 1}, "name": "g", "bits": 20, "min": -500, "max": 500}`,
			`{ v: 2, key: { loc: "2d", a: 1 }, name: "g", bits: 20, min: -500, max: 500 }`, 0, "", ""},
		{"TwoDTwoFields", `{"key": {"a": "2d", "b": "2d"}, "name": "g"}`, "", mongoerr.Location16800, "Location16800", "can't have 2 geo fields"},
		{"TwoDNotFirst", `{"key": {"a": 1, "b": "2d"}, "name": "g"}`, "", mongoerr.Location16801, "Location16801", "2d has to be first in index"},
		{"TwoDHashed", `{"key": {"a": "2d", "b": "hashed"}, "name": "g"}`, "", mongoerr.CannotCreateIndex, "CannotCreateIndex",
			"Can't use more than one index plugin for a single index."},
		{"TwoDBits", `{"key": {"a": "2d"}, "name": "g", "bits": 33}`, "", mongoerr.InvalidOptions, "InvalidOptions",
			"bits for hash must be > 0 and <= 32, but 33 bits were specified"},
		{"TwoDRegion", `{"key": {"a": "2d"}, "name": "g", "min": 10, "max": -10}`, "", mongoerr.InvalidOptions, "InvalidOptions",
			"region for hash must be valid and have positive area, but [10, -10] was specified"},
		{"CollationNotDocument", `{"key": {"a": 1}, "name": "x", "collation": "fr"}`, "", mongoerr.TypeMismatch, "TypeMismatch",
			"The field 'collation' must be an object, but got string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := ext(t, `{"v": `+tc.spec+`}`).Lookup("v")
			x, err := ddl.ParseIndexSpec(v, false)
			wantCode(t, err, tc.code, tc.codeName, tc.msg)
			if err != nil {
				return
			}
			if x.ID != 0 || x.Ready {
				t.Errorf("id %d ready %v", x.ID, x.Ready)
			}
			if got := specShell(&x); got != tc.want {
				t.Errorf("index %s, want %s", got, tc.want)
			}
		})
	}
	x, err := ddl.ParseIndexSpec(bsonx.DocValue(ext(t, `{"key": {"a": 1}, "name": "x", "bogus": 1}`)), true)
	if err != nil || specShell(&x) != `{ v: 2, key: { a: 1 }, name: "x" }` {
		t.Errorf("ignoring unknown fields: %s, %v", specShell(&x), err)
	}
}

// TestResolveIndexCollation checks the collation an index settles on: a simple one is
// not stored, none inherits the collection's default, an explicit one stays.
func TestResolveIndexCollation(t *testing.T) {
	fr := ext(t, `{"locale": "fr"}`)
	for _, tc := range []struct {
		name, spec string
		dflt       bool
		want       string
	}{
		{"SimpleDropped", `{"key": {"a": 1}, "name": "x", "collation": {"locale": "simple"}}`, true, `{ v: 2, key: { a: 1 }, name: "x" }`},
		{"SimpleKeepsOthers", `{"key": {"a": 1}, "name": "x", "unique": true, "collation": {"locale": "simple"}}`, false,
			`{ v: 2, key: { a: 1 }, name: "x", unique: true }`},
		{"NoneNoDefault", `{"key": {"a": 1}, "name": "x"}`, false, `{ v: 2, key: { a: 1 }, name: "x" }`},
		{"NoneInherits", `{"key": {"a": 1}, "name": "x", "sparse": true}`, true, `{ v: 2, key: { a: 1 }, name: "x", sparse: true, collation: { locale: "fr" } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := spec(t, tc.spec)
			var d []byte
			if tc.dflt {
				d = fr
			}
			ddl.ResolveIndexCollation(&x, d)
			if got := specShell(&x); got != tc.want {
				t.Errorf("index %s, want %s", got, tc.want)
			}
		})
	}
}

// TestCompareIndexes checks how a requested index compares with an existing one: the
// signature (key, partial filter, unique, sparse) makes another index, TTL and hidden an
// equivalent one.
func TestCompareIndexes(t *testing.T) {
	old := spec(t, `{"key": {"a": 1}, "name": "a_1", "unique": true, "expireAfterSeconds": 10}`)
	for _, tc := range []struct {
		name, req string
		want      ddl.IndexComparison
	}{
		{"Identical", `{"key": {"a": 1}, "name": "other", "unique": 1, "expireAfterSeconds": 10}`, ddl.IndexIdentical},
		{"OtherTTL", `{"key": {"a": 1}, "name": "a_1", "unique": true, "expireAfterSeconds": 20}`, ddl.IndexEquivalent},
		{"Hidden", `{"key": {"a": 1}, "name": "a_1", "unique": true, "expireAfterSeconds": 10, "hidden": true}`, ddl.IndexEquivalent},
		{"NotUnique", `{"key": {"a": 1}, "name": "a_1", "expireAfterSeconds": 10}`, 0},
		{"Sparse", `{"key": {"a": 1}, "name": "a_1", "unique": true, "sparse": true, "expireAfterSeconds": 10}`, 0},
		{"OtherKey", `{"key": {"a": -1}, "name": "a_1", "unique": true, "expireAfterSeconds": 10}`, 0},
		{"Partial", `{"key": {"a": 1}, "name": "a_1", "unique": true, "expireAfterSeconds": 10, "partialFilterExpression": {"a": 1}}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := spec(t, tc.req)
			if got := ddl.CompareIndexes(&req, &old); got != tc.want {
				t.Errorf("comparison %d, want %d", got, tc.want)
			}
		})
	}
	if ddl.SpecString(&old) != `{ v: 2, key: { a: 1 }, name: "a_1", unique: true, expireAfterSeconds: 10 }` {
		t.Errorf("SpecString %s", ddl.SpecString(&old))
	}
	if !ddl.ContainsID([]store.IndexID{3, 5}, 5) || ddl.ContainsID([]store.IndexID{3}, 5) || ddl.ContainsID(nil, 1) {
		t.Error("ContainsID")
	}
}
