package match

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// schemaCases are $jsonSchema filters from MongoDB's documentation ($jsonSchema and
// "Specify Validation With JSON Schema") and the rules of jstests/core/json_schema/*:
// keywords apply only to values of their kind, properties never traverse arrays.
var schemaCases = []matchCase{
	{"Empty", `{"$jsonSchema": {}}`, `{"a": 1}`, true},
	{"RequiredPresent", `{"$jsonSchema": {"required": ["a", "b"]}}`, `{"a": 1, "b": null}`, true},
	{"RequiredMissing", `{"$jsonSchema": {"required": ["a", "b"]}}`, `{"a": 1}`, false},
	{"BsonTypeInt", `{"$jsonSchema": {"properties": {"a": {"bsonType": "int"}}}}`, `{"a": 1}`, true},
	{"BsonTypeIntVsDouble", `{"$jsonSchema": {"properties": {"a": {"bsonType": "int"}}}}`, `{"a": 1.5}`, false},
	{"BsonTypeNumber", `{"$jsonSchema": {"properties": {"a": {"bsonType": "number"}}}}`, `{"a": {"$numberDecimal": "2"}}`, true},
	{"BsonTypeList", `{"$jsonSchema": {"properties": {"a": {"bsonType": ["string", "null"]}}}}`, `{"a": null}`, true},
	{"BsonTypeObjectID", `{"$jsonSchema": {"properties": {"_id": {"bsonType": "objectId"}}}}`, `{"_id": {"$oid": "5f0c1b2a3d4e5f6a7b8c9d0e"}}`, true},
	{"PropertyAbsent", `{"$jsonSchema": {"properties": {"a": {"bsonType": "string"}}}}`, `{"b": 1}`, true},
	{"TypeNumber", `{"$jsonSchema": {"properties": {"a": {"type": "number"}}}}`, `{"a": {"$numberLong": "5"}}`, true},
	{"TypeObjectTop", `{"$jsonSchema": {"type": "object"}}`, `{}`, true},
	{"TypeBoolean", `{"$jsonSchema": {"properties": {"a": {"type": "boolean"}}}}`, `{"a": 0}`, false},
	{"ArrayNotTraversed", `{"$jsonSchema": {"properties": {"a": {"bsonType": "int"}}}}`, `{"a": [1]}`, false},
	{"Minimum", `{"$jsonSchema": {"properties": {"a": {"minimum": 5}}}}`, `{"a": 5}`, true},
	{"MinimumExclusive", `{"$jsonSchema": {"properties": {"a": {"minimum": 5, "exclusiveMinimum": true}}}}`, `{"a": 5}`, false},
	{"MaximumAcrossTypes", `{"$jsonSchema": {"properties": {"a": {"maximum": 5}}}}`, `{"a": {"$numberDecimal": "4.5"}}`, true},
	{"MinimumIgnoresStrings", `{"$jsonSchema": {"properties": {"a": {"minimum": 5}}}}`, `{"a": "x"}`, true},
	{"MaxLengthCodePoints", `{"$jsonSchema": {"properties": {"a": {"maxLength": 2}}}}`, `{"a": "éé"}`, true},
	{"MinLength", `{"$jsonSchema": {"properties": {"a": {"minLength": 3}}}}`, `{"a": "ab"}`, false},
	{"Pattern", `{"$jsonSchema": {"properties": {"email": {"pattern": "@mongodb\\.com$"}}}}`, `{"email": "a@mongodb.com"}`, true},
	{"PatternFails", `{"$jsonSchema": {"properties": {"email": {"pattern": "@mongodb\\.com$"}}}}`, `{"email": "a@x.org"}`, false},
	{"Enum", `{"$jsonSchema": {"properties": {"a": {"enum": [1, "x", null]}}}}`, `{"a": 1.0}`, true},
	{"EnumFails", `{"$jsonSchema": {"properties": {"a": {"enum": [1, "x"]}}}}`, `{"a": 2}`, false},
	{"AdditionalFalse", `{"$jsonSchema": {"properties": {"_id": {}, "a": {}}, "additionalProperties": false}}`, `{"_id": 1, "a": 1, "b": 2}`, false},
	{"AdditionalSchema", `{"$jsonSchema": {"properties": {"_id": {}}, "additionalProperties": {"bsonType": "string"}}}`, `{"_id": 1, "b": "x"}`, true},
	{"PatternProperties", `{"$jsonSchema": {"patternProperties": {"^x_": {"bsonType": "int"}}, "additionalProperties": false}}`, `{"x_a": 1}`, true},
	{"PatternPropertiesFails", `{"$jsonSchema": {"patternProperties": {"^x_": {"bsonType": "int"}}}}`, `{"x_a": "s"}`, false},
	{"ItemsSchema", `{"$jsonSchema": {"properties": {"a": {"items": {"bsonType": "int"}}}}}`, `{"a": [1, 2]}`, true},
	{"ItemsSchemaFails", `{"$jsonSchema": {"properties": {"a": {"items": {"bsonType": "int"}}}}}`, `{"a": [1, "x"]}`, false},
	{"ItemsTuple", `{"$jsonSchema": {"properties": {"a": {"items": [{"bsonType": "int"}], "additionalItems": false}}}}`, `{"a": [1, 2]}`, false},
	{"ItemsTupleMore", `{"$jsonSchema": {"properties": {"a": {"items": [{"bsonType": "int"}], "additionalItems": {"bsonType": "string"}}}}}`, `{"a": [1, "x"]}`, true},
	{"MinItems", `{"$jsonSchema": {"properties": {"a": {"minItems": 2}}}}`, `{"a": [1]}`, false},
	{"MaxItems", `{"$jsonSchema": {"properties": {"a": {"maxItems": 2}}}}`, `{"a": [1, 2]}`, true},
	{"UniqueItems", `{"$jsonSchema": {"properties": {"a": {"uniqueItems": true}}}}`, `{"a": [1, 1.0]}`, false},
	{"MinProperties", `{"$jsonSchema": {"minProperties": 3}}`, `{"_id": 1, "a": 1}`, false},
	{"MaxPropertiesNested", `{"$jsonSchema": {"properties": {"a": {"maxProperties": 1}}}}`, `{"a": {"x": 1}}`, true},
	{"AllOf", `{"$jsonSchema": {"properties": {"a": {"allOf": [{"minimum": 1}, {"maximum": 3}]}}}}`, `{"a": 4}`, false},
	{"AnyOf", `{"$jsonSchema": {"properties": {"a": {"anyOf": [{"bsonType": "string"}, {"minimum": 3}]}}}}`, `{"a": 4}`, true},
	{"OneOfBoth", `{"$jsonSchema": {"properties": {"a": {"oneOf": [{"minimum": 1}, {"maximum": 3}]}}}}`, `{"a": 2}`, false},
	{"Not", `{"$jsonSchema": {"properties": {"a": {"not": {"bsonType": "string"}}}}}`, `{"a": 1}`, true},
	{"DependenciesFields", `{"$jsonSchema": {"dependencies": {"a": ["b"]}}}`, `{"a": 1}`, false},
	{"DependenciesAbsent", `{"$jsonSchema": {"dependencies": {"a": ["b"]}}}`, `{"c": 1}`, true},
	{"DependenciesSchema", `{"$jsonSchema": {"dependencies": {"a": {"required": ["c"]}}}}`, `{"a": 1, "c": 2}`, true},
	{"NestedRequired", `{"$jsonSchema": {"properties": {"a": {"bsonType": "object", "required": ["b"]}}}}`, `{"a": {"c": 1}}`, false},
	{"TitleIgnored", `{"$jsonSchema": {"title": "t", "description": "d", "properties": {"a": {"description": "x"}}}}`, `{"a": 1}`, true},
	{"MultipleOf", `{"$jsonSchema": {"properties": {"a": {"multipleOf": 5}}}}`, `{"a": 15}`, true},
	{"InOr", `{"$or": [{"$jsonSchema": {"required": ["z"]}}, {"a": 1}]}`, `{"a": 1}`, true},
	{"WithField", `{"a": 1, "$jsonSchema": {"required": ["b"]}}`, `{"a": 1}`, false},
}

func TestMatchJSONSchema(t *testing.T) {
	for _, tc := range schemaCases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(doc(t, tc.filter), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Match(doc(t, tc.doc)); got != tc.want {
				t.Errorf("%s on %s: %v, want %v", tc.filter, tc.doc, got, tc.want)
			}
		})
	}
}

func TestMatchJSONSchemaDetails(t *testing.T) {
	s, err := CompileSchema(doc(t, `{"required": ["b"], "properties": {"a": {"bsonType": "string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := doc(t, `{"a": 1}`)
	out := s.AppendDetails(nil, got)
	d := docOf(out)
	want := `{"operatorName": "$jsonSchema","schemaRulesNotSatisfied": [{"operatorName": "required","specifiedAs": {"required": ["b"]},"missingProperties": ["b"]},{"operatorName": "properties","propertiesNotSatisfied": [{"propertyName": "a","details": [{"operatorName": "bsonType","specifiedAs": {"bsonType": "string"},"reason": "type did not match","consideredValue": {"$numberInt":"1"},"consideredType": "int"}]}]}]}`
	if d.String() != want {
		t.Errorf("details:\n%s\nwant\n%s", d, want)
	}
}

// docOf wraps appended elements in a document.
func docOf(elems []byte) bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = append(d, elems...)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}
