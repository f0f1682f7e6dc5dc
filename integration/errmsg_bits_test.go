package integration

import "testing"

// TestFindErrmsgNonNegativeLong: the arguments MongoDB reads with
// parseIntegerElementToNonNegativeLong (the bit tests' masks, $skip, $limit) are refused in
// its words, FailedToParse for the bit tests and wrapped by the stage for $skip and $limit.
func TestFindErrmsgNonNegativeLong(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1, "a": 5}`)
	runErrmsgCases(t, c.Database(), []errmsgCase{
		{"BitsAllClearNegative", `{"find": "c", "filter": {"a": {"$bitsAllClear": -1}}}`, 9, "FailedToParse",
			"Expected a non-negative number in: $bitsAllClear: -1"},
		{"BitsAnySetNegativeLong", `{"find": "c", "filter": {"a": {"$bitsAnySet": {"$numberLong": "-3"}}}}`, 9, "FailedToParse",
			"Expected a non-negative number in: $bitsAnySet: -3"},
		{"BitsAllSetNegativeDouble", `{"find": "c", "filter": {"a": {"$bitsAllSet": -2.0}}}`, 9, "FailedToParse",
			"Expected a non-negative number in: $bitsAllSet: -2.0"},
		{"BitsAnyClearFraction", `{"find": "c", "filter": {"a": {"$bitsAnyClear": 1.5}}}`, 9, "FailedToParse",
			"Expected an integer: $bitsAnyClear: 1.5"},
		{"BitsAllSetTooLarge", `{"find": "c", "filter": {"a": {"$bitsAllSet": 1e20}}}`, 9, "FailedToParse",
			"Cannot represent as a 64-bit integer: $bitsAllSet: 1e+20"},
		{"BitsPositionNegative", `{"find": "c", "filter": {"a": {"$bitsAllClear": [-1]}}}`, 2, "BadValue",
			"bit positions must be >= 0 but got: 0: -1"},
		{"SkipNegative", `{"aggregate": "c", "pipeline": [{"$skip": -1}], "cursor": {}}`, 5107200, "Location5107200",
			"invalid argument to $skip stage: Expected a non-negative number in: $skip: -1"},
		{"SkipString", `{"aggregate": "c", "pipeline": [{"$skip": "a"}], "cursor": {}}`, 5107200, "Location5107200",
			`invalid argument to $skip stage: Expected a number in: $skip: "a"`},
		{"LimitNegative", `{"aggregate": "c", "pipeline": [{"$limit": -1}], "cursor": {}}`, 5107201, "Location5107201",
			"invalid argument to $limit stage: Expected a non-negative number in: $limit: -1"},
		{"LimitFraction", `{"aggregate": "c", "pipeline": [{"$limit": 1.5}], "cursor": {}}`, 5107201, "Location5107201",
			"invalid argument to $limit stage: Expected an integer: $limit: 1.5"},
		{"LimitZero", `{"aggregate": "c", "pipeline": [{"$limit": 0}], "cursor": {}}`, 15958, "Location15958",
			"the limit must be positive"},
	})
}
