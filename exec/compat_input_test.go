package exec

import (
	"context"
	"testing"

	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// inputErrorCases are commands MongoDB 7.0 refuses for their input, with its code and
// message (a prefix of errmsg where MongoDB adds detail cleave does not reproduce). Each
// runs in database t over a collection c holding {_id: 1, a: [1, 2]}. The messages come
// from MongoDB's source: the IDL's OptionalBool::parseFromBSON (basic_types.h),
// parseMaxTimeMS (max_time_ms_parser.cpp), CommandHelpers::parseNsCollectionRequired.
var inputErrorCases = []struct {
	name string
	cmd  string
	code mongoerr.Code
	msg  string
}{
	{"FindSingleBatchInt", `{"find": "c", "singleBatch": 1}`, mongoerr.TypeMismatch,
		"Field 'singleBatch' should be a boolean value, but found: int"},
	{"FindAllowDiskUseString", `{"find": "c", "allowDiskUse": "yes"}`, mongoerr.TypeMismatch,
		"Field 'allowDiskUse' should be a boolean value, but found: string"},
	{"FindNoCursorTimeoutNull", `{"find": "c", "noCursorTimeout": null}`, mongoerr.TypeMismatch,
		"Field 'noCursorTimeout' should be a boolean value, but found: null"},
	{"FindReturnKeyDouble", `{"find": "c", "returnKey": 1.0}`, mongoerr.TypeMismatch,
		"Field 'returnKey' should be a boolean value, but found: double"},
	{"FindShowRecordIDInt", `{"find": "c", "showRecordId": 0}`, mongoerr.TypeMismatch,
		"Field 'showRecordId' should be a boolean value, but found: int"},
	{"FindMaxTimeMSString", `{"find": "c", "maxTimeMS": "x"}`, mongoerr.TypeMismatch,
		"BSON field 'find.maxTimeMS' is the wrong type 'string', expected types '[long, int, decimal, double']"},
	{"AggregateMaxTimeMSNegativeLong", `{"aggregate": "c", "pipeline": [], "cursor": {}, "maxTimeMS": {"$numberLong": "-1"}}`,
		mongoerr.Location51024, "BSON field 'maxTimeMS' value must be >= 0, actual value '-1'"},
	{"AggregateMaxTimeMSNegativeDouble", `{"aggregate": "c", "pipeline": [], "cursor": {}, "maxTimeMS": -1.5}`,
		mongoerr.Location51024, "BSON field 'maxTimeMS' value must be >= 0, actual value '-1'"},
	{"AggregateMaxTimeMSTooLarge", `{"aggregate": "c", "pipeline": [], "cursor": {}, "maxTimeMS": {"$numberLong": "2147483648"}}`,
		mongoerr.BadValue, "2147483648 value for maxTimeMS is out of range [0, 2147483647]"},
	{"AggregateMaxTimeMSObject", `{"aggregate": "c", "pipeline": [], "cursor": {}, "maxTimeMS": {}}`, mongoerr.TypeMismatch,
		"BSON field 'aggregate.maxTimeMS' is the wrong type 'object', expected types '[long, int, decimal, double']"},
	{"InsertMaxTimeMSBool", `{"insert": "c", "documents": [{}], "maxTimeMS": true}`, mongoerr.TypeMismatch,
		"BSON field 'insert.maxTimeMS' is the wrong type 'bool', expected types '[long, int, decimal, double']"},
	{"FindMaxTimeMSNull", `{"find": "c", "maxTimeMS": null}`, mongoerr.BadValue, "maxTimeMS must be a number"},
	{"FindMaxTimeMSFraction", `{"find": "c", "maxTimeMS": 1000.5}`, mongoerr.BadValue, "maxTimeMS has non-integral value"},
	{"FindMaxTimeMSNegative", `{"find": "c", "maxTimeMS": -1}`, mongoerr.BadValue, "-1 value for maxTimeMS is out of range [0, 2147483647]"},
	{"FindMaxTimeMSTooLarge", `{"find": "c", "maxTimeMS": {"$numberLong": "2147483648"}}`, mongoerr.BadValue,
		"2147483648 value for maxTimeMS is out of range [0, 2147483647]"},
	{"FindCollectionInt", `{"find": 1}`, mongoerr.InvalidNamespace, "Failed to parse namespace element"},
	{"CountCollectionDouble", `{"count": 1.5}`, mongoerr.InvalidNamespace, "Failed to parse namespace element"},
	{"InsertCollectionInt", `{"insert": 1, "documents": [{}]}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"DeleteCollectionBool", `{"delete": true, "deletes": [{"q": {}, "limit": 0}]}`, mongoerr.InvalidNamespace, "collection name has invalid type bool"},
	{"UpdateCollectionInt", `{"update": 1, "updates": [{"q": {}, "u": {}}]}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"FindAndModifyCollectionInt", `{"findAndModify": 1, "remove": true}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"DistinctCollectionInt", `{"distinct": 1, "key": "a"}`, mongoerr.InvalidNamespace, "Failed to parse namespace element"},
	{"CreateIndexesCollectionInt", `{"createIndexes": 1, "indexes": [{"key": {"a": 1}, "name": "a_1"}]}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"ListIndexesCollectionInt", `{"listIndexes": 1}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"DropCollectionInt", `{"drop": 1}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"CreateCollectionInt", `{"create": 1}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"InsertDocumentsInt", `{"insert": "c", "documents": [1]}`, mongoerr.TypeMismatch,
		"BSON field 'insert.documents.0' is the wrong type 'int', expected type 'object'"},
	{"InsertDocumentsStringAfterDocument", `{"insert": "c", "documents": [{"_id": 5}, "x"]}`, mongoerr.TypeMismatch,
		"BSON field 'insert.documents.1' is the wrong type 'string', expected type 'object'"},
	{"CollModCollectionInt", `{"collMod": 1}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	// The Stable API (validate_api_parameters.cpp, api_parameters.cpp).
	{"APIStrictDistinct", `{"distinct": "c", "key": "a", "apiVersion": "1", "apiStrict": true}`, mongoerr.APIStrictError,
		"Provided apiStrict:true, but the command distinct is not in API Version 1. Information on supported commands and " +
			"migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api."},
	{"APIStrictStage", `{"aggregate": 1, "pipeline": [{"$listLocalSessions": {}}], "cursor": {}, "apiVersion": "1", "apiStrict": true}`,
		mongoerr.APIStrictError, "$listLocalSessions is not allowed with 'apiStrict: true' in API Version 1"},
	{"APIVersionTwo", `{"ping": 1, "apiVersion": "2"}`, mongoerr.APIVersionError, "Cannot accept API version 2"},
	{"APIVersionUnknown", `{"ping": 1, "apiVersion": "x"}`, mongoerr.APIVersionError, `API version must be "1"`},
	{"APIVersionInt", `{"ping": 1, "apiVersion": 1}`, mongoerr.TypeMismatch,
		"BSON field 'APIParametersFromClient.apiVersion' is the wrong type 'int', expected type 'string'"},
	{"APIStrictWithoutVersion", `{"ping": 1, "apiStrict": false}`, mongoerr.Location4886600,
		"Provided apiStrict and/or apiDeprecationErrors without passing apiVersion"},
	{"UpdatePipelineUnknownStage", `{"update": "c", "updates": [{"q": {}, "u": [{"$bogus": {}}]}]}`, mongoerr.Location40324,
		"Unrecognized pipeline stage name: '$bogus'"},
}

// TestCommandCompatInputErrors runs inputErrorCases through the connection handler.
func TestCommandCompatInputErrors(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	bg := context.Background()
	handleJSON(bg, t, c, `{"insert": "c", "documents": [{"_id": 1, "a": [1, 2]}]}`)
	for _, tc := range inputErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, tc.cmd, handleJSON(bg, t, c, tc.cmd), tc.code, tc.msg)
		})
	}
}

// stageErrorCases are aggregation stages MongoDB 7.0 refuses, with its code and message:
// DocumentSourceProject::create and DocumentSourceAddFields::create add the context
// "Invalid <stage name as written>" to every error from parsing the specification.
var stageErrorCases = []struct {
	name     string
	pipeline string
	code     mongoerr.Code
	msg      string
}{
	{"AddFieldsDollarField", `[{"$addFields": {"$a": 1}}]`, mongoerr.Location16410,
		"Invalid $addFields :: caused by :: FieldPath field names may not start with '$'. Consider using $getField or $setField."},
	{"SetDollarField", `[{"$set": {"a.$b": 1}}]`, mongoerr.Location16410,
		"Invalid $set :: caused by :: FieldPath field names may not start with '$'. Consider using $getField or $setField."},
	{"ProjectDollarField", `[{"$project": {"$a": 1}}]`, mongoerr.Location16410,
		"Invalid $project :: caused by :: FieldPath field names may not start with '$'. Consider using $getField or $setField."},
	{"AddFieldsEmptySegment", `[{"$addFields": {"a..b": 1}}]`, mongoerr.Location15998,
		"Invalid $addFields :: caused by :: FieldPath field names may not be empty strings."},
	{"ProjectTrailingDot", `[{"$project": {"a.": 1}}]`, mongoerr.Location40353,
		"Invalid $project :: caused by :: FieldPath must not end with a '.'."},
	{"AddFieldsUndefinedVariable", `[{"$addFields": {"x": "$$nope"}}]`, mongoerr.Location17276,
		"Invalid $addFields :: caused by :: Use of undefined variable: nope"},
	{"ProjectPathCollisionOnce", `[{"$project": {"a": 1, "a.b": 1}}]`, mongoerr.Code(31250),
		"Invalid $project :: caused by :: Path collision at a.b"},
	{"ProjectPositional", `[{"$project": {"a.$": 1}}]`, mongoerr.Location31324,
		"Invalid $project :: caused by :: Cannot use positional projection in aggregation projection"},
	{"ProjectPositionalNested", `[{"$project": {"a": {"b.$": 0}}}]`, mongoerr.Location31324,
		"Invalid $project :: caused by :: Cannot use positional projection in aggregation projection"},
	{"ProjectPositionalMiddle", `[{"$project": {"a.$.b": 1}}]`, mongoerr.Location31394,
		"Invalid $project :: caused by :: As of 4.4, it's illegal to specify positional operator in the middle of a path." +
			"Positional projection may only be used at the end, for example: a.b.$. If the query previously used a form " +
			"like a.b.$.d, remove the parts following the '$' and the results will be equivalent."},
	{"ProjectPositionalMiddleNested", `[{"$project": {"a": {"b.$.c": 0}}}]`, mongoerr.Location31394,
		"Invalid $project :: caused by :: As of 4.4, it's illegal to specify positional operator in the middle of a path." +
			"Positional projection may only be used at the end, for example: a.b.$. If the query previously used a form " +
			"like a.b.$.d, remove the parts following the '$' and the results will be equivalent."},
	{"AddFieldsPositionalMiddle", `[{"$addFields": {"a.$.b": 1}}]`, mongoerr.Location16410,
		"Invalid $addFields :: caused by :: FieldPath field names may not start with '$'. Consider using $getField or $setField."},
	{"SortEmptySegment", `[{"$sort": {"a..b": 1}}]`, mongoerr.Location15998, "FieldPath field names may not be empty strings."},
	{"SortTrailingDot", `[{"$sort": {"a.": 1}}]`, mongoerr.Location40353, "FieldPath must not end with a '.'."},
	{"ProjectNotObjectUnprefixed", `[{"$project": 1}]`, mongoerr.Location15969, "$project specification must be an object"},
}

// TestAggregateCompatStageErrors runs stageErrorCases through the connection handler and
// compares the whole message.
func TestAggregateCompatStageErrors(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	bg := context.Background()
	handleJSON(bg, t, c, `{"insert": "c", "documents": [{"_id": 1, "a": [1, 2]}]}`)
	for _, tc := range stageErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			reply := handleJSON(bg, t, c, `{"aggregate": "c", "pipeline": `+tc.pipeline+`, "cursor": {}}`)
			wantError(t, tc.pipeline, reply, tc.code, tc.msg)
			if got, _ := reply.Lookup("errmsg").StringValueOK(); got != tc.msg {
				t.Errorf("%s: errmsg %q, want %q", tc.pipeline, got, tc.msg)
			}
		})
	}
}

// TestInsertCompatNonDocumentWritesNothing checks that an insert whose documents hold a
// non-document fails as a whole: the documents before it are not written either.
func TestInsertCompatNonDocumentWritesNothing(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	bg := context.Background()
	wantError(t, "insert", handleJSON(bg, t, c, `{"insert": "c", "documents": [{"_id": 1}, 2]}`), mongoerr.TypeMismatch,
		"BSON field 'insert.documents.1' is the wrong type 'int', expected type 'object'")
	reply := handleJSON(bg, t, c, `{"find": "c"}`)
	if docs, _ := reply.Lookup("cursor", "firstBatch").Array().Values(); len(docs) != 0 {
		t.Fatalf("documents written: %v", reply)
	}
}
