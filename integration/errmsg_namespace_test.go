package integration

import "testing"

// TestCommandErrmsgNamespaceElement: a namespace element that is not a string is refused as
// "Failed to parse namespace element" by the commands that may also take a collection UUID
// there (find, count, distinct: their authorization check parses it first), and as "collection
// name has invalid type …" by the others; all InvalidNamespace.
func TestCommandErrmsgNamespaceElement(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	const failed = "Failed to parse namespace element"
	runErrmsgCases(t, db, []errmsgCase{
		{"FindInt", `{"find": 1}`, 73, "InvalidNamespace", failed},
		{"FindBool", `{"find": true}`, 73, "InvalidNamespace", failed},
		{"CountDouble", `{"count": 1.5}`, 73, "InvalidNamespace", failed},
		{"DistinctObject", `{"distinct": {}, "key": "a"}`, 73, "InvalidNamespace", failed},
		{"ExplainFindInt", `{"explain": {"find": 1}}`, 73, "InvalidNamespace", failed},
		{"InsertInt", `{"insert": 1, "documents": [{}]}`, 73, "InvalidNamespace", "collection name has invalid type int"},
		{"FindAndModifyInt", `{"findAndModify": 1, "remove": true}`, 73, "InvalidNamespace", "collection name has invalid type int"},
		{"DropNull", `{"drop": null}`, 73, "InvalidNamespace", "collection name has invalid type null"},
	})
}
