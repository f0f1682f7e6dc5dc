package integration

import "testing"

// TestFindAndModifyErrmsgPlanExecutor: what fails while findAndModify's plan executor runs
// on the document comes back under MongoDB's context ("Plan executor error during
// findAndModify :: caused by :: …", find_and_modify.cpp's advanceExecutor); what fails while
// parsing the command keeps its bare message.
func TestFindAndModifyErrmsgPlanExecutor(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1, "k": 1, "b": [1, 2], "s": "x"}`, `{"_id": 2, "k": 2}`)
	wrUniqueIndex(t, c, "k")
	const ctx = "Plan executor error during findAndModify :: caused by :: "
	runErrmsgCases(t, c.Database(), []errmsgCase{
		{"ModifyID", `{"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"_id": 3}}}`, 66, "ImmutableField",
			ctx + "Performing an update on the path '_id' would modify the immutable field '_id'"},
		{"ReplaceID", `{"findAndModify": "c", "query": {"_id": 1}, "update": {"_id": 5, "x": 1}}`, 66, "ImmutableField",
			ctx + "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 5"},
		{"IncNonNumeric", `{"findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"b": 1}}}`, 14, "TypeMismatch",
			ctx + "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'b' of non-numeric type array"},
		{"DuplicateKey", `{"findAndModify": "c", "query": {"_id": 2}, "update": {"$set": {"k": 1}}}`, 11000, "DuplicateKey",
			ctx + "E11000 duplicate key error collection: " + dbName(t) + ".c index: k_1 dup key: { k: 1 }"},
		{"UpsertDuplicateKey", `{"findAndModify": "c", "query": {"_id": 9, "k": 1}, "update": {"$set": {"z": 1}}, "upsert": true}`,
			11000, "DuplicateKey", ctx + "E11000 duplicate key error collection: " + dbName(t) + ".c index: k_1 dup key: { k: 1 }"},
		{"PipelineExpression", `{"findAndModify": "c", "query": {}, "let": {"v": "x"}, "update": [{"$set": {"z": {"$abs": "$$v"}}}]}`,
			28765, "Location28765", ctx + "$abs only supports numeric types, not string"},
		{"ConflictIsParse", `{"findAndModify": "c", "query": {}, "update": {"$set": {"a": 1}, "$inc": {"a": 1}}}`,
			40, "ConflictingUpdateOperators", "Updating the path 'a' would create a conflict at 'a'"},
		{"BothIsParse", `{"findAndModify": "c", "remove": true, "update": {"$set": {"a": 1}}}`,
			9, "FailedToParse", "Cannot specify both an update and remove=true"},
	})
}
