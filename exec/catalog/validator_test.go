package catalog_test

import (
	"testing"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestValidatorCheck checks the fate of a write under each validation level and action:
// stored, stored with a warning, or refused with DocumentValidationFailure 121.
func TestValidatorCheck(t *testing.T) {
	valid, invalid := `{"_id": 1, "a": 9}`, `{"_id": 1, "a": 1}`
	for _, tc := range []struct {
		name, opts, doc, old string // old "" for an insert
		warn, refused        bool
	}{
		{"StrictValid", `{"validator": {"a": {"$gt": 5}}}`, valid, "", false, false},
		{"StrictInvalid", `{"validator": {"a": {"$gt": 5}}}`, invalid, "", false, true},
		{"StrictUpdateOfInvalid", `{"validator": {"a": {"$gt": 5}}, "validationLevel": "strict"}`, invalid, invalid, false, true},
		{"ModerateInsert", `{"validator": {"a": {"$gt": 5}}, "validationLevel": "moderate"}`, invalid, "", false, true},
		{"ModerateUpdateOfValid", `{"validator": {"a": {"$gt": 5}}, "validationLevel": "moderate"}`, invalid, valid, false, true},
		{"ModerateUpdateOfInvalid", `{"validator": {"a": {"$gt": 5}}, "validationLevel": "moderate"}`, invalid, invalid, false, false},
		{"Off", `{"validator": {"a": {"$gt": 5}}, "validationLevel": "off"}`, invalid, "", false, false},
		{"Warn", `{"validator": {"a": {"$gt": 5}}, "validationAction": "warn"}`, invalid, "", true, false},
		{"WarnValid", `{"validator": {"a": {"$gt": 5}}, "validationAction": "warn"}`, valid, "", false, false},
		{"Expr", `{"validator": {"$expr": {"$gt": ["$a", 5]}}}`, invalid, "", false, true},
		{"NoValidator", `{"capped": false}`, invalid, "", false, false},
		{"EmptyValidator", `{"validator": {}}`, invalid, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ci := mustColl(t, "", tc.opts, nil)
			var old []byte
			if tc.old != "" {
				old = ext(t, tc.old)
			}
			warn, err := ci.Validator.Check(ext(t, tc.doc), old)
			if warn != tc.warn {
				t.Errorf("warn %v, want %v", warn, tc.warn)
			}
			if tc.refused {
				wantCode(t, err, mongoerr.DocumentValidationFailure, "DocumentValidationFailure", "Document failed validation")
			} else {
				wantCode(t, err, 0, "", "")
			}
		})
	}
	if _, err := compileColl(t, "", `{"validator": {"$bogus": 1}}`, nil); err == nil {
		t.Error("an invalid validator compiles")
	}
}

// TestValidatorFailureDetails checks errInfo of a refusal, as MongoDB's
// doc_validation_error builds it: the failing clause, or the clauses not satisfied.
func TestValidatorFailureDetails(t *testing.T) {
	for _, tc := range []struct {
		name, validator, doc, want string
	}{
		{"Comparison", `{"a": {"$gt": 5}}`, `{"_id": 1, "a": 3}`,
			`{ errInfo: { failingDocumentId: 1, details: { operatorName: "$gt", specifiedAs: { a: { $gt: 5 } }, reason: "comparison failed", consideredValue: 3 } } }`},
		{"Equality", `{"a": 5}`, `{"_id": 1, "a": 3}`,
			`{ errInfo: { failingDocumentId: 1, details: { operatorName: "$eq", specifiedAs: { a: 5 }, reason: "comparison failed", consideredValue: 3 } } }`},
		{"Missing", `{"a.b": {"$exists": true}}`, `{"_id": 1}`,
			`{ errInfo: { failingDocumentId: 1, details: { operatorName: "$exists", specifiedAs: { a.b: { $exists: true } }, reason: "field was missing" } } }`},
		{"Type", `{"a": {"$type": "string"}}`, `{"_id": 1, "a": 3}`,
			`{ errInfo: { failingDocumentId: 1, details: { operatorName: "$type", specifiedAs: { a: { $type: "string" } }, reason: "type did not match", consideredValue: 3, consideredType: "int" } } }`},
		{"Expr", `{"$expr": {"$eq": ["$a", 1]}}`, `{"_id": 1, "a": 3}`,
			`{ errInfo: { failingDocumentId: 1, details: { operatorName: "$expr", specifiedAs: { $expr: { $eq: [ "$a", 1 ] } }, reason: "expression did not match", expressionResult: false } } }`},
		{"Clauses", `{"a": {"$gt": 5}, "b": 1, "c": {"$lt": 0}}`, `{"_id": 1, "a": 3, "b": 1}`,
			`{ errInfo: { failingDocumentId: 1, details: { operatorName: "$and", clausesNotSatisfied: [ { index: 0, details: { operatorName: "$gt", specifiedAs: { a: { $gt: 5 } }, reason: "comparison failed", consideredValue: 3 } }, { index: 2, details: { operatorName: "$lt", specifiedAs: { c: { $lt: 0 } }, reason: "field was missing" } } ] } } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ci := mustColl(t, "", `{"validator": `+tc.validator+`}`, nil)
			e := ci.Validator.Failure(ext(t, tc.doc))
			if got := bsonx.ShellString(bsonx.DocValue(e.Info)); got != tc.want {
				t.Errorf("errInfo\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
