package integration

import "testing"

// TestAggregateErrmsgProjectPositional: $project refuses a positional operator at the end of a
// path (31324) and in its middle (31394) as projection_parser does, under the stage's context;
// find's projection gives the same 31394.
func TestAggregateErrmsgProjectPositional(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1, "a": [{"b": 1}]}`)
	const middle = "As of 4.4, it's illegal to specify positional operator in the middle of a path." +
		"Positional projection may only be used at the end, for example: a.b.$. If the query previously used a form " +
		"like a.b.$.d, remove the parts following the '$' and the results will be equivalent."
	runErrmsgCases(t, c.Database(), []errmsgCase{
		{"ProjectMiddle", `{"aggregate": "c", "pipeline": [{"$project": {"a.$.b": 1}}], "cursor": {}}`, 31394, "Location31394",
			"Invalid $project :: caused by :: " + middle},
		{"ProjectMiddleExclusion", `{"aggregate": "c", "pipeline": [{"$project": {"a.$.b": 0}}], "cursor": {}}`, 31394, "Location31394",
			"Invalid $project :: caused by :: " + middle},
		{"ProjectEnd", `{"aggregate": "c", "pipeline": [{"$project": {"a.$": 1}}], "cursor": {}}`, 31324, "Location31324",
			"Invalid $project :: caused by :: Cannot use positional projection in aggregation projection"},
		{"FindMiddle", `{"find": "c", "filter": {"a.b": 1}, "projection": {"a.$.b": 1}}`, 31394, "Location31394", middle},
	})
}
