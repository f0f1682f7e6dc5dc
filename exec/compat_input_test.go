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
		"BSON field 'find.maxTimeMS' is the wrong type 'string', expected types '[long, int, decimal, double]'"},
	{"AggregateMaxTimeMSObject", `{"aggregate": "c", "pipeline": [], "cursor": {}, "maxTimeMS": {}}`, mongoerr.TypeMismatch,
		"BSON field 'aggregate.maxTimeMS' is the wrong type 'object', expected types '[long, int, decimal, double]'"},
	{"InsertMaxTimeMSBool", `{"insert": "c", "documents": [{}], "maxTimeMS": true}`, mongoerr.TypeMismatch,
		"BSON field 'insert.maxTimeMS' is the wrong type 'bool', expected types '[long, int, decimal, double]'"},
	{"FindMaxTimeMSNull", `{"find": "c", "maxTimeMS": null}`, mongoerr.BadValue, "maxTimeMS must be a number"},
	{"FindMaxTimeMSFraction", `{"find": "c", "maxTimeMS": 1000.5}`, mongoerr.BadValue, "maxTimeMS has non-integral value"},
	{"FindMaxTimeMSNegative", `{"find": "c", "maxTimeMS": -1}`, mongoerr.BadValue, "-1 value for maxTimeMS is out of range"},
	{"FindMaxTimeMSTooLarge", `{"find": "c", "maxTimeMS": {"$numberLong": "2147483648"}}`, mongoerr.BadValue,
		"2147483648 value for maxTimeMS is out of range"},
	{"FindCollectionInt", `{"find": 1}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"CountCollectionDouble", `{"count": 1.5}`, mongoerr.InvalidNamespace, "collection name has invalid type double"},
	{"InsertCollectionInt", `{"insert": 1, "documents": [{}]}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"DeleteCollectionBool", `{"delete": true, "deletes": [{"q": {}, "limit": 0}]}`, mongoerr.InvalidNamespace, "collection name has invalid type bool"},
	{"UpdateCollectionInt", `{"update": 1, "updates": [{"q": {}, "u": {}}]}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"FindAndModifyCollectionInt", `{"findAndModify": 1, "remove": true}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"DistinctCollectionInt", `{"distinct": 1, "key": "a"}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"CreateIndexesCollectionInt", `{"createIndexes": 1, "indexes": [{"key": {"a": 1}, "name": "a_1"}]}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"ListIndexesCollectionInt", `{"listIndexes": 1}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"DropCollectionInt", `{"drop": 1}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"CreateCollectionInt", `{"create": 1}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
	{"CollModCollectionInt", `{"collMod": 1}`, mongoerr.InvalidNamespace, "collection name has invalid type int"},
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
