package integration

import "testing"

// TestCommandErrmsgTypeLists: MongoDB 7.0's IDL names one expected type in quotes and a list
// of them with the closing quote inside the bracket ('[long, int, decimal, double']).
func TestCommandErrmsgTypeLists(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1}`)
	const numbers = "expected types '[long, int, decimal, double']"
	runErrmsgCases(t, c.Database(), []errmsgCase{
		{"FindLimit", `{"find": "c", "limit": "x"}`, 14, "TypeMismatch", "BSON field 'find.limit' is the wrong type 'string', " + numbers},
		{"FindSkip", `{"find": "c", "skip": true}`, 14, "TypeMismatch", "BSON field 'find.skip' is the wrong type 'bool', " + numbers},
		{"FindBatchSize", `{"find": "c", "batchSize": {}}`, 14, "TypeMismatch", "BSON field 'find.batchSize' is the wrong type 'object', " + numbers},
		{"CountMaxTimeMS", `{"count": "c", "maxTimeMS": "x"}`, 14, "TypeMismatch", "BSON field 'count.maxTimeMS' is the wrong type 'string', " + numbers},
		{"DropIndexesIndex", `{"dropIndexes": "c", "index": true}`, 14, "TypeMismatch",
			"BSON field 'dropIndexes.index' is the wrong type 'bool', expected types '[string, object, array']"},
		{"FindFilterOneType", `{"find": "c", "filter": 1}`, 14, "TypeMismatch", "BSON field 'find.filter' is the wrong type 'int', expected type 'object'"},
	})
}
