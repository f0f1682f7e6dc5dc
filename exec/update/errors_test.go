package update

import (
	"strings"
	"testing"

	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// errorCase is an update that fails, at Compile (doc empty) or at Apply, with MongoDB's code
// and message (from src/mongo/db/update/*.cpp and the jstests that check them).
type errorCase struct {
	name    string
	doc     string // empty: the error comes from Compile
	update  string
	filters []string
	pos     *int
	code    mongoerr.Code
	msg     string
}

var compileErrorCases = []errorCase{
	{name: "UnknownModifier", update: `{$foo: {a: 1}}`, code: mongoerr.FailedToParse,
		msg: "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array"},
	{name: "FieldAfterModifier", update: `{$set: {a: 1}, b: 2}`, code: mongoerr.FailedToParse,
		msg: "Unknown modifier: b. Expected a valid update modifier or pipeline-style update specified as an array"},
	{name: "ModifierNotDocument", update: `{$set: 1}`, code: mongoerr.FailedToParse,
		msg: "Modifiers operate on fields but we found type int instead. For example: {$mod: {<field>: ...}} not {$set: 1}"},
	{name: "VersionField", update: `{$set: {a: 1}, $v: 2}`, code: mongoerr.FailedToParse,
		msg: "The $v update field is only recognized internally"},
	{name: "ConflictChildAfterParent", update: `{$set: {a: 2, "a.b": 1}}`, code: mongoerr.ConflictingUpdateOperators,
		msg: "Updating the path 'a.b' would create a conflict at 'a'"},
	{name: "ConflictParentAfterChild", update: `{$set: {"a.b": 1, a: 2}}`, code: mongoerr.ConflictingUpdateOperators,
		msg: "Updating the path 'a' would create a conflict at 'a'"},
	{name: "ConflictAcrossOperators", update: `{$set: {a: 1}, $inc: {a: 1}}`, code: mongoerr.ConflictingUpdateOperators,
		msg: "Updating the path 'a' would create a conflict at 'a'"},
	{name: "ConflictWithRenameSource", update: `{$rename: {a: "b"}, $set: {"a.c": 1}}`, code: mongoerr.ConflictingUpdateOperators,
		msg: "Updating the path 'a.c' would create a conflict at 'a'"},
	{name: "ConflictArrayAndObjectNode", update: `{$set: {"a.$[].b": 1, "a.c": 1}}`, code: mongoerr.ConflictingUpdateOperators,
		msg: "Updating the path 'a.c' would create a conflict at 'a'"},
	{name: "EmptyFieldName", update: `{$set: {"a..b": 1}}`, code: mongoerr.EmptyFieldName,
		msg: "The update path 'a..b' contains an empty field name, which is not allowed."},
	{name: "TrailingDot", update: `{$set: {"a.": 1}}`, code: mongoerr.EmptyFieldName,
		msg: "The update path 'a.' contains an empty field name, which is not allowed."},
	{name: "EmptyPath", update: `{$set: {"": 1}}`, code: mongoerr.EmptyFieldName, msg: "An empty update path is not valid."},
	{name: "TooManyPositional", update: `{$set: {"a.$.b.$": 1}}`, code: mongoerr.BadValue,
		msg: "Too many positional (i.e. '$') elements found in path 'a.$.b.$'"},
	{name: "PositionalFirst", update: `{$set: {"$.a": 1}}`, code: mongoerr.BadValue,
		msg: "Cannot have positional (i.e. '$') element in the first position in path '$.a'"},
	{name: "ArrayFilterFirst", update: `{$set: {"$[].a": 1}}`, code: mongoerr.BadValue,
		msg: "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '$[].a'"},
	{name: "NoArrayFilter", update: `{$set: {"a.$[x]": 1}}`, code: mongoerr.BadValue,
		msg: "No array filter found for identifier 'x' in path 'a.$[x]'"},
	{name: "UnusedArrayFilter", update: `{$set: {"a.$[i]": 1}}`, filters: []string{`{i: 1}`, `{y: 1}`, `{x: 1}`},
		code: mongoerr.FailedToParse, msg: "The array filter for identifier 'x' was not used in the update { $set: { a.$[i]: 1 } }"},
	{name: "ArrayFilterBadName", update: `{$set: {a: 1}}`, filters: []string{`{X: 1}`}, code: mongoerr.BadValue,
		msg: "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string " +
			"beginning with a lowercase letter, found 'X'"},
	{name: "ArrayFilterTwoNames", update: `{$set: {a: 1}}`, filters: []string{`{a: 1, b: 1}`}, code: mongoerr.FailedToParse,
		msg: "Error parsing array filter :: caused by :: Expected a single top-level field name, found 'a' and 'b'"},
	{name: "ArrayFilterTwoNamesInOr", update: `{$set: {a: 1}}`, filters: []string{`{$or: [{"a.x": 1}, {"b.x": 1}]}`},
		code: mongoerr.FailedToParse,
		msg:  "Error parsing array filter :: caused by :: Expected a single top-level field name, found 'a' and 'b'"},
	{name: "ArrayFilterDuplicate", update: `{$set: {"a.$[x]": 1}}`, filters: []string{`{x: 1}`, `{x: 2}`},
		code: mongoerr.FailedToParse, msg: "Found multiple array filters with the same top-level field name x"},
	{name: "ArrayFilterEmpty", update: `{$set: {a: 1}}`, filters: []string{`{}`}, code: mongoerr.FailedToParse,
		msg: "Cannot use an expression without a top-level field name in arrayFilters"},
	{name: "IncNonNumericArgument", update: `{$inc: {a: "x"}}`, code: mongoerr.TypeMismatch,
		msg: `Cannot increment with non-numeric argument: {a: "x"}`},
	{name: "MulNonNumericArgument", update: `{$mul: {a: true}}`, code: mongoerr.TypeMismatch,
		msg: "Cannot multiply with non-numeric argument: {a: true}"},
	{name: "PullAllNotArray", update: `{$pullAll: {a: 1}}`, code: mongoerr.BadValue,
		msg: "$pullAll requires an array argument but was given a int"},
	{name: "PopNotOne", update: `{$pop: {a: 2}}`, code: mongoerr.FailedToParse, msg: "$pop expects 1 or -1, found: 2"},
	{name: "PopNotNumber", update: `{$pop: {a: "x"}}`, code: mongoerr.FailedToParse, msg: `Expected a number in: a: "x"`},
	{name: "PopNotInteger", update: `{$pop: {a: 1.5}}`, code: mongoerr.FailedToParse, msg: "Expected an integer: a: 1.5"},
	{name: "BitNotDocument", update: `{$bit: {a: 1}}`, code: mongoerr.BadValue,
		msg: "The $bit modifier is not compatible with a int. You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}"},
	{name: "BitUnknownOperator", update: `{$bit: {a: {nand: 1}}}`, code: mongoerr.BadValue,
		msg: "The $bit modifier only supports 'and', 'or', and 'xor', not 'nand' which is an unknown operator: {nand: 1}"},
	{name: "BitNotInteger", update: `{$bit: {a: {and: 1.5}}}`, code: mongoerr.BadValue,
		msg: "The $bit modifier field must be an Integer(32/64 bit); a 'double' is not supported here: {and: 1.5}"},
	{name: "BitEmpty", update: `{$bit: {a: {}}}`, code: mongoerr.BadValue,
		msg: "You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}"},
	{name: "CurrentDateBadType", update: `{$currentDate: {a: 1}}`, code: mongoerr.BadValue,
		msg: "int is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'})."},
	{name: "CurrentDateBadTypeName", update: `{$currentDate: {a: {$type: "x"}}}`, code: mongoerr.BadValue,
		msg: "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}"},
	{name: "CurrentDateUnknownOption", update: `{$currentDate: {a: {x: 1}}}`, code: mongoerr.BadValue,
		msg: "Unrecognized $currentDate option: x"},
	{name: "RenameToNotString", update: `{$rename: {a: 1}}`, code: mongoerr.BadValue,
		msg: "The 'to' field for $rename must be a string: a: 1"},
	{name: "RenameSamePath", update: `{$rename: {a: "a"}}`, code: mongoerr.BadValue,
		msg: `The source and target field for $rename must differ: a: "a"`},
	{name: "RenameSameBranch", update: `{$rename: {a: "a.b"}}`, code: mongoerr.BadValue,
		msg: `The source and target field for $rename must not be on the same path: a: "a.b"`},
	{name: "RenameDynamicSource", update: `{$rename: {"a.$": "b"}}`, code: mongoerr.BadValue,
		msg: "The source field for $rename may not be dynamic: a.$"},
	{name: "RenameDynamicDestination", update: `{$rename: {a: "b.$[]"}}`, code: mongoerr.BadValue,
		msg: "The destination field for $rename may not be dynamic: b.$[]"},
	{name: "PushEachNotArray", update: `{$push: {a: {$each: 1}}}`, code: mongoerr.BadValue,
		msg: "The argument to $each in $push must be an array but it was of type: int"},
	{name: "PushUnknownClause", update: `{$push: {a: {$each: [1], $foo: 1}}}`, code: mongoerr.BadValue,
		msg: "Unrecognized clause in $push: $foo"},
	{name: "PushDuplicateClause", update: `{$push: {a: {$each: [1], $slice: 1, $slice: 2}}}`, code: mongoerr.BadValue,
		msg: "Only one $slice is supported."},
	{name: "PushSliceNotInteger", update: `{$push: {a: {$each: [], $slice: "x"}}}`, code: mongoerr.BadValue,
		msg: "The value for $slice must be an integer value but was given type: string"},
	{name: "PushPositionNotInteger", update: `{$push: {a: {$each: [], $position: 1.5}}}`, code: mongoerr.BadValue,
		msg: "The value for $position must be an integer value, not of type: double"},
	{name: "PushSortBadNumber", update: `{$push: {a: {$each: [], $sort: 2}}}`, code: mongoerr.BadValue,
		msg: "The $sort element value must be either 1 or -1"},
	{name: "PushSortBadType", update: `{$push: {a: {$each: [], $sort: "x"}}}`, code: mongoerr.BadValue,
		msg: "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields"},
	{name: "PushSortEmptyPattern", update: `{$push: {a: {$each: [], $sort: {}}}}`, code: mongoerr.BadValue,
		msg: "The $sort pattern is empty when it should be a set of fields."},
	{name: "PushSortBadDirection", update: `{$push: {a: {$each: [], $sort: {b: true}}}}`, code: mongoerr.BadValue,
		msg: "The $sort element value must be either 1 or -1"},
	{name: "PushSortEmptyPart", update: `{$push: {a: {$each: [], $sort: {"b..c": 1}}}}`, code: mongoerr.BadValue,
		msg: "The $sort field is a dotted field but has an empty part: b..c"},
	{name: "AddToSetEachNotArray", update: `{$addToSet: {a: {$each: 1}}}`, code: mongoerr.TypeMismatch,
		msg: "The argument to $each in $addToSet must be an array but it was of type int"},
	{name: "AddToSetEachNotAlone", update: `{$addToSet: {a: {$each: [1], b: 1}}}`, code: mongoerr.BadValue,
		msg: "Found unexpected fields after $each in $addToSet: { $each: [ 1 ], b: 1 }"},
}

var applyErrorCases = []errorCase{
	{name: "PositionalWithoutMatch", doc: `{_id: 1, a: [1]}`, update: `{$set: {"a.$": 1}}`, code: mongoerr.BadValue,
		msg: "The positional operator did not find the match needed from the query."},
	{name: "PositionalWithoutMatchOnMissingPath", doc: `{_id: 1}`, update: `{$set: {"a.$.b": 1}}`, code: mongoerr.BadValue,
		msg: "The positional operator did not find the match needed from the query."},
	{name: "ImmutableID", doc: `{_id: 1}`, update: `{$set: {_id: 2}}`, code: mongoerr.ImmutableField,
		msg: "Performing an update on the path '_id' would modify the immutable field '_id'"},
	{name: "ImmutableIDField", doc: `{_id: {a: 1}}`, update: `{$set: {"_id.a": 2}}`, code: mongoerr.ImmutableField,
		msg: "Performing an update on the path '_id.a' would modify the immutable field '_id'"},
	{name: "ImmutableIDCreate", doc: `{_id: {a: 1}}`, update: `{$set: {"_id.b.c": 2}}`, code: mongoerr.ImmutableField,
		msg: "Updating the path '_id' to _id: { a: 1, b: { c: 2 } } would modify the immutable field '_id'"},
	{name: "ImmutableIDInc", doc: `{_id: 1}`, update: `{$inc: {_id: 1}}`, code: mongoerr.ImmutableField,
		msg: "Performing an update on the path '_id' would modify the immutable field '_id'"},
	{name: "UnsetID", doc: `{_id: 1}`, update: `{$unset: {_id: 1}}`, code: mongoerr.ImmutableField,
		msg: "Performing an update on the path '_id' would modify the immutable field '_id'"},
	{name: "RenameToID", doc: `{_id: 1, a: 2}`, update: `{$rename: {a: "_id"}}`, code: mongoerr.ImmutableField,
		msg: "Performing an update on the path '_id' would modify the immutable field '_id'"},
	{name: "RenameFromID", doc: `{_id: 1}`, update: `{$rename: {_id: "b"}}`, code: mongoerr.ImmutableField,
		msg: "Performing an update on the path '_id' would modify the immutable field '_id'"},
	{name: "IncNonNumeric", doc: `{_id: 1, a: "x"}`, update: `{$inc: {a: 1}}`, code: mongoerr.TypeMismatch,
		msg: "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string"},
	{name: "FirstErrorInPathOrder", doc: `{_id: 1, c: {d: "z"}, b: "x", a: "y"}`, update: `{$inc: {b: 1, a: 1, "c.d": 1}}`,
		code: mongoerr.TypeMismatch,
		msg:  "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string"},
	{name: "MulNull", doc: `{_id: "k", a: {b: null}}`, update: `{$mul: {"a.b": 2}}`, code: mongoerr.TypeMismatch,
		msg: `Cannot apply $mul to a value of non-numeric type. {_id: "k"} has the field 'b' of non-numeric type null`},
	{name: "IncLongOverflow", doc: `{_id: 1, a: L(9223372036854775807)}`, update: `{$inc: {a: 1}}`, code: mongoerr.BadValue,
		msg: "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: 1}"},
	{name: "MulLongOverflow", doc: `{_id: 1, a: L(4611686018427387904)}`, update: `{$mul: {a: 2}}`, code: mongoerr.BadValue,
		msg: "Failed to apply $mul operations to current value ((NumberLong)4611686018427387904) for document {_id: 1}"},
	{name: "CreateUnderScalar", doc: `{_id: 1, a: 1}`, update: `{$set: {"a.b": 1}}`, code: mongoerr.PathNotViable,
		msg: "Cannot create field 'b' in element {a: 1}"},
	{name: "CreateDeepUnderScalar", doc: `{_id: 1, a: {b: "s"}}`, update: `{$inc: {"a.b.c.d": 1}}`, code: mongoerr.PathNotViable,
		msg: `Cannot create field 'c' in element {b: "s"}`},
	{name: "CreateNamedFieldInArray", doc: `{_id: 1, a: [1, {b: 2}]}`, update: `{$set: {"a.b": 1}}`, code: mongoerr.PathNotViable,
		msg: "Cannot create field 'b' in element {a: [ 1, { b: 2 } ]}"},
	{name: "PullThroughScalar", doc: `{_id: 1, a: 1}`, update: `{$pull: {"a.b": 1}}`, code: mongoerr.PathNotViable,
		msg: "Cannot use the part (b) of (a.b) to traverse the element ({a: 1})"},
	{name: "PopThroughArrayByName", doc: `{_id: 1, a: [[1]]}`, update: `{$pop: {"a.x.y": 1}}`, code: mongoerr.PathNotViable,
		msg: "Cannot use the part (x) of (a.x.y) to traverse the element ({a: [ [ 1 ] ]})"},
	{name: "PushNotArray", doc: `{_id: 1, a: {b: 1}}`, update: `{$push: {"a.b": 2}}`, code: mongoerr.BadValue,
		msg: "The field 'a.b' must be an array but is of type int in document {_id: 1}"},
	{name: "AddToSetNotArray", doc: `{_id: 1, a: 1}`, update: `{$addToSet: {a: 2}}`, code: mongoerr.BadValue,
		msg: "Cannot apply $addToSet to non-array field. Field named 'a' has non-array type int"},
	{name: "PopNotArray", doc: `{_id: 1, a: {b: "x"}}`, update: `{$pop: {"a.b": 1}}`, code: mongoerr.TypeMismatch,
		msg: "Path 'a.b' contains an element of non-array type 'string'"},
	{name: "PullNotArray", doc: `{_id: 1, a: 1}`, update: `{$pull: {a: 1}}`, code: mongoerr.BadValue,
		msg: "Cannot apply $pull to a non-array value"},
	{name: "PullAllNotArray", doc: `{_id: 1, a: 1}`, update: `{$pullAll: {a: [1]}}`, code: mongoerr.BadValue,
		msg: "Cannot apply $pull to a non-array value"},
	{name: "BitNotIntegral", doc: `{_id: 1, a: 1.5}`, update: `{$bit: {a: {and: 1}}}`, code: mongoerr.BadValue,
		msg: "Cannot apply $bit to a value of non-integral type._id: 1 has the field a of non-integer type double"},
	{name: "RenameSourceInArray", doc: `{_id: 1, a: [{b: 1}]}`, update: `{$rename: {"a.0.b": "c"}}`, code: mongoerr.BadValue,
		msg: "The source field cannot be an array element, 'a.0.b' in doc with _id: 1 has an array field called 'a'"},
	{name: "RenameDestinationInArray", doc: `{_id: 1, a: [1], b: 2}`, update: `{$rename: {b: "a.1"}}`, code: mongoerr.BadValue,
		msg: "The destination field cannot be an array element, 'a.1' in doc with _id: 1 has an array field called 'a'"},
	{name: "RenameSourceNotViable", doc: `{_id: 1, a: 5}`, update: `{$rename: {"a.b": "c"}}`, code: mongoerr.PathNotViable,
		msg: "cannot use the part (a of a.b) to traverse the element ({a: 5})"},
	{name: "RenameDestinationNotViable", doc: `{_id: 1, a: 5, b: 1}`, update: `{$rename: {b: "a.c"}}`, code: mongoerr.PathNotViable,
		msg: "Cannot create field 'c' in element {a: 5}"},
	{name: "ArrayUpdateMissingPath", doc: `{_id: 1}`, update: `{$set: {"a.$[].b": 1}}`, code: mongoerr.BadValue,
		msg: "The path 'a' must exist in the document in order to apply array updates."},
	{name: "ArrayUpdateNonArray", doc: `{_id: 1, a: 5}`, update: `{$set: {"a.$[]": 1}}`, code: mongoerr.BadValue,
		msg: "Cannot apply array updates to non-array element a: 5"},
	{name: "ArrayFiltersConflict", doc: `{_id: 1, a: [0]}`, update: `{$set: {"a.$[i]": 2, "a.$[j]": 3}}`,
		filters: []string{`{i: 0}`, `{j: 0}`}, code: mongoerr.ConflictingUpdateOperators, msg: "Update created a conflict at 'a.0'"},
	{name: "ArrayFiltersNestedConflict", doc: `{_id: 0, a: [{x: 0, b: [{y: 0, c: 0}]}, {x: 1, b: [{y: 0, c: 0}]}]}`,
		update: `{$set: {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[k].c": 2}}`, filters: []string{`{"i.x": 0}`, `{"j.x": 0}`, `{"k.y": 0}`},
		code: mongoerr.ConflictingUpdateOperators, msg: "Update created a conflict at 'a.0.b.$[k].c'"},
	{name: "PositionalConflict", doc: `{_id: 1, a: [1, 2]}`, pos: at(1), update: `{$set: {"a.$": 1, "a.1": 2}}`,
		code: mongoerr.ConflictingUpdateOperators, msg: "Update created a conflict at 'a.1'"},
	{name: "TopLevelDollarField", doc: `{_id: 1}`, update: `{$set: {$x: 1}}`, code: mongoerr.DollarPrefixedFieldName,
		msg: "The dollar ($) prefixed field '$x' in '$x' is not allowed in the context of an update's replacement document. " +
			"Consider using an aggregation pipeline with $replaceWith."},
	{name: "TopLevelDollarPath", doc: `{_id: 1}`, update: `{$inc: {"$x.y": 1}}`, code: mongoerr.DollarPrefixedFieldName,
		msg: "The dollar ($) prefixed field '$x' in '$x' is not allowed in the context of an update's replacement document. " +
			"Consider using an aggregation pipeline with $replaceWith."},
	{name: "ExistingTopLevelDollarField", doc: `{_id: 1, $x: 1}`, update: `{$inc: {$x: 1}}`,
		code: mongoerr.DollarPrefixedFieldName,
		msg: "The dollar ($) prefixed field '$x' in '$x' is not allowed in the context of an update's replacement document. " +
			"Consider using an aggregation pipeline with $replaceWith."},
	{name: "Backfill", doc: `{_id: 1, a: []}`, update: `{$set: {"a.1500001": 1}}`, code: codeCannotBackfillArray,
		msg: "can't backfill more than 1500000 elements"},
	{name: "BackfillHugeIndex", doc: `{_id: 1, a: []}`, update: `{$set: {"a.99999999999": 1}}`, code: codeCannotBackfillArray,
		msg: "can't backfill more than 1500000 elements"},
	{name: "PullThroughHugeIndex", doc: `{_id: 1, a: []}`, update: `{$pull: {"a.99999999999.b": 1}}`, code: mongoerr.PathNotViable,
		msg: "Cannot use the part (99999999999) of (a.99999999999.b) to traverse the element ({a: []})"},
	{name: "ReplacementChangesID", doc: `{_id: 1, a: 1}`, update: `{_id: 2, b: 1}`, code: mongoerr.ImmutableField,
		msg: "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2"},
	{name: "ReplacementArrayID", doc: `{_id: 1}`, update: `{_id: [1], a: 1}`, code: mongoerr.InvalidIDField,
		msg: "The '_id' value cannot be of type array"},
	{name: "ReplacementDollarIDField", doc: `{_id: 1}`, update: `{_id: {$x: 1}}`, code: mongoerr.DollarPrefixedFieldName,
		msg: "_id fields may not contain '$'-prefixed fields: $x is not valid for storage."},
	{name: "ReplacementTopLevelDollar", doc: `{_id: 1}`, update: `{b: 2, $set: {a: 1}}`, code: mongoerr.DollarPrefixedFieldName,
		msg: "The dollar ($) prefixed field '$set' in '$set' is not allowed in the context of an update's replacement document. " +
			"Consider using an aggregation pipeline with $replaceWith."},
	{name: "ReplacementDBRefOrder", doc: `{_id: 1}`, update: `{a: 1, $id: 1}`, code: mongoerr.InvalidDBRef,
		msg: "Found $id field without a $ref before it, which is invalid."},
}

func TestUpdateErrors(t *testing.T) {
	for _, tc := range append(append([]errorCase(nil), compileErrorCases...), applyErrorCases...) {
		t.Run(tc.name, func(t *testing.T) {
			u, err := Compile(docOf(t, tc.update), testOptions(t, tc.filters))
			if tc.doc == "" {
				checkError(t, err, tc.code, tc.msg)
				return
			}
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			pos := -1
			if tc.pos != nil {
				pos = *tc.pos
			}
			dst := []byte("keep")
			out, _, err := u.Apply(dst, docOf(t, tc.doc), pos, false)
			checkError(t, err, tc.code, tc.msg)
			if string(out) != "keep" {
				t.Errorf("dst changed on error: %q", out)
			}
		})
	}
}

// checkError compares an error's code and message with MongoDB's.
func checkError(t *testing.T, err error, code mongoerr.Code, msg string) {
	t.Helper()
	gotCode, gotMsg := codeOf(err)
	if gotCode != code || gotMsg != msg {
		t.Errorf("got  %d %q\nwant %d %q", gotCode, gotMsg, code, msg)
	}
}

func TestUpdateErrorsDepth(t *testing.T) {
	path := strings.Repeat("a.", 179) + "a" // 180 components
	u, err := Compile(docOf(t, `{$set: {"`+path+`": {b: 1}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = u.Apply(nil, docOf(t, `{_id: 1}`), -1, false)
	checkError(t, err, mongoerr.Overflow, "Document exceeds maximum nesting depth of 180")
	u, err = Compile(docOf(t, `{$set: {"`+path+`": 1}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err = u.Apply(nil, docOf(t, `{_id: 1}`), -1, false); err != nil {
		t.Fatalf("180 levels refused: %v", err)
	}
}

func TestUpdateErrorsInvalidInput(t *testing.T) {
	_, err := Compile(bsoncore.Document{5, 0, 0, 0}, nil)
	checkError(t, err, mongoerr.InvalidBSON, "invalid BSON in update")
	u, err := Compile(docOf(t, `{$set: {a: 1}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range [][]byte{nil, {1, 2}, {6, 0, 0, 0, 0, 0}, {5, 0, 0, 0, 1}} {
		if _, _, err := u.Apply(nil, doc, -1, false); err == nil {
			t.Errorf("Apply(%v) accepted invalid BSON", doc)
		}
	}
	_, err = CompileValue(bsoncore.Value{Type: bsoncore.TypeInt32, Data: []byte{1, 0, 0, 0}}, nil)
	checkError(t, err, mongoerr.FailedToParse, "Update argument must be either an object or an array")
	_, err = CompilePipeline(bsoncore.Array(docOf(t, `{"0": {$set: {a: 1}}}`)), nil)
	checkError(t, err, mongoerr.NotImplemented, "pipeline-style updates are not supported")
	_, err = CompilePipeline(bsoncore.Array(docOf(t, `{}`)), testOptions(t, []string{`{i: 1}`}))
	checkError(t, err, mongoerr.FailedToParse, "Cannot specify arrayFilters and a pipeline update")
}
