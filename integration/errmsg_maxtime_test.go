package integration

import "testing"

// TestCommandErrmsgMaxTimeMS: maxTimeMS out of range names the range in every command that
// parses it generically (parseMaxTimeMS); aggregate's IDL refuses a negative value first,
// whatever its numeric type, with Location51024; IDL type errors list the types as 7.0 does.
func TestCommandErrmsgMaxTimeMS(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1}`)
	const rng = " value for maxTimeMS is out of range [0, 2147483647]"
	runErrmsgCases(t, c.Database(), []errmsgCase{
		{"FindNegative", `{"find": "c", "maxTimeMS": -1}`, 2, "BadValue", "-1" + rng},
		{"FindNegativeLong", `{"find": "c", "maxTimeMS": {"$numberLong": "-1"}}`, 2, "BadValue", "-1" + rng},
		{"FindTooLarge", `{"find": "c", "maxTimeMS": {"$numberLong": "2147483648"}}`, 2, "BadValue", "2147483648" + rng},
		{"CountNegative", `{"count": "c", "maxTimeMS": -5}`, 2, "BadValue", "-5" + rng},
		{"DistinctNegative", `{"distinct": "c", "key": "a", "maxTimeMS": -5}`, 2, "BadValue", "-5" + rng},
		{"InsertNegative", `{"insert": "c", "documents": [{}], "maxTimeMS": -1}`, 2, "BadValue", "-1" + rng},
		{"UpdateNegative", `{"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}], "maxTimeMS": -1}`, 2, "BadValue", "-1" + rng},
		{"FindAndModifyNegative", `{"findAndModify": "c", "remove": true, "maxTimeMS": -1}`, 2, "BadValue", "-1" + rng},
		{"AggregateNegativeLong", `{"aggregate": "c", "pipeline": [], "cursor": {}, "maxTimeMS": {"$numberLong": "-1"}}`,
			51024, "Location51024", "BSON field 'maxTimeMS' value must be >= 0, actual value '-1'"},
		{"AggregateNegativeInt", `{"aggregate": "c", "pipeline": [], "cursor": {}, "maxTimeMS": -1123123}`,
			51024, "Location51024", "BSON field 'maxTimeMS' value must be >= 0, actual value '-1123123'"},
		{"AggregateTooLarge", `{"aggregate": "c", "pipeline": [], "cursor": {}, "maxTimeMS": {"$numberLong": "2147483648"}}`,
			2, "BadValue", "2147483648" + rng},
		{"AggregateFraction", `{"aggregate": "c", "pipeline": [], "cursor": {}, "maxTimeMS": 1000.5}`,
			2, "BadValue", "maxTimeMS has non-integral value"},
		{"FindString", `{"find": "c", "maxTimeMS": "x"}`, 14, "TypeMismatch",
			"BSON field 'find.maxTimeMS' is the wrong type 'string', expected types '[long, int, decimal, double']"},
		{"AggregateObject", `{"aggregate": "c", "pipeline": [], "cursor": {}, "maxTimeMS": {}}`, 14, "TypeMismatch",
			"BSON field 'aggregate.maxTimeMS' is the wrong type 'object', expected types '[long, int, decimal, double']"},
	})
}
