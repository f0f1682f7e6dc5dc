package ddl_test

import (
	"testing"

	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestParseCollMod checks collMod's argument types and MongoDB's IDL refusals, before the
// collection is looked at.
func TestParseCollMod(t *testing.T) {
	for _, tc := range []struct {
		name, cmd     string
		code          mongoerr.Code
		codeName, msg string
	}{
		{"Empty", `{"collMod": "c"}`, 0, "", ""},
		{"Generic", `{"collMod": "c", "lsid": {}, "$db": "db", "comment": 1}`, 0, "", ""},
		{"IndexChanges", `{"collMod": "c", "index": {"name": "a_1", "hidden": 1, "expireAfterSeconds": 5.0}}`, 0, "", ""},
		{"Validation", `{"collMod": "c", "validator": {"a": 1}, "validationLevel": "moderate", "validationAction": "warn"}`, 0, "", ""},
		{"ExpireOff", `{"collMod": "c", "expireAfterSeconds": "off"}`, 0, "", ""},
		{"DryRunNumber", `{"collMod": "c", "dryRun": 1}`, 0, "", ""},
		{"NameNotString", `{"collMod": 1}`, mongoerr.InvalidNamespace, "InvalidNamespace", "collection name has invalid type int"},
		{"NameEmpty", `{"collMod": ""}`, mongoerr.InvalidNamespace, "InvalidNamespace", "Invalid namespace specified ''"},
		{"UnknownField", `{"collMod": "c", "bogus": 1}`, mongoerr.Location40415, "Location40415", "BSON field 'collMod.bogus' is an unknown field."},
		{"IndexNotDoc", `{"collMod": "c", "index": 1}`, mongoerr.TypeMismatch, "TypeMismatch",
			"BSON field 'collMod.index' is the wrong type 'int', expected type 'object'"},
		{"IndexUnknownField", `{"collMod": "c", "index": {"name": "a", "bogus": 1}}`, mongoerr.Location40415, "Location40415",
			"BSON field 'collMod.index.bogus' is an unknown field."},
		{"IndexNameNotString", `{"collMod": "c", "index": {"name": 1}}`, mongoerr.TypeMismatch, "TypeMismatch",
			"BSON field 'collMod.index.name' is the wrong type 'int', expected type 'string'"},
		{"IndexKeyPatternNotDoc", `{"collMod": "c", "index": {"keyPattern": "a"}}`, mongoerr.TypeMismatch, "TypeMismatch",
			"BSON field 'collMod.index.keyPattern' is the wrong type 'string', expected type 'object'"},
		{"IndexHiddenNotBool", `{"collMod": "c", "index": {"name": "a", "hidden": "yes"}}`, mongoerr.TypeMismatch, "TypeMismatch",
			"BSON field 'collMod.index.hidden' is the wrong type 'string', expected type 'bool'"},
		{"IndexExpireNotNumber", `{"collMod": "c", "index": {"name": "a", "expireAfterSeconds": "1"}}`, mongoerr.TypeMismatch, "TypeMismatch",
			"BSON field 'collMod.index.expireAfterSeconds' is the wrong type 'string', expected types '[long, int, decimal, double']"},
		{"IndexExpireNaN", `{"collMod": "c", "index": {"name": "a", "expireAfterSeconds": {"$numberDouble": "NaN"}}}`, mongoerr.BadValue, "BadValue",
			"BSON field 'collMod.index.expireAfterSeconds' value must be a number, got NaN"},
		{"ValidatorNotDoc", `{"collMod": "c", "validator": 1}`, mongoerr.TypeMismatch, "TypeMismatch",
			"BSON field 'collMod.validator' is the wrong type 'int', expected type 'object'"},
		{"ValidationLevelUnknown", `{"collMod": "c", "validationLevel": "bad"}`, mongoerr.BadValue, "BadValue",
			"Enumeration value 'bad' for field 'collMod.validationLevel' is not a valid value."},
		{"ValidationActionUnknown", `{"collMod": "c", "validationAction": "strict"}`, mongoerr.BadValue, "BadValue",
			"Enumeration value 'strict' for field 'collMod.validationAction' is not a valid value."},
		{"ValidationActionNotString", `{"collMod": "c", "validationAction": 1}`, mongoerr.TypeMismatch, "TypeMismatch",
			"BSON field 'collMod.validationAction' is the wrong type 'int', expected type 'string'"},
		{"ExpireNotNumber", `{"collMod": "c", "expireAfterSeconds": true}`, mongoerr.TypeMismatch, "TypeMismatch",
			"BSON field 'collMod.expireAfterSeconds' is the wrong type 'bool', expected types '[long, int, decimal, double']"},
		{"CappedSizeZero", `{"collMod": "c", "cappedSize": 0}`, mongoerr.Location51024, "Location51024",
			"BSON field 'collMod.cappedSize' value must be >= 1, actual value '0'"},
		{"CappedSizeHuge", `{"collMod": "c", "cappedSize": {"$numberLong": "1125899906842625"}}`, mongoerr.Location51024, "Location51024",
			"BSON field 'collMod.cappedSize' value must be <= 1125899906842624, actual value '1125899906842625'"},
		{"CappedMaxHuge", `{"collMod": "c", "cappedMax": {"$numberLong": "2147483648"}}`, mongoerr.Location51024, "Location51024",
			"BSON field 'collMod.cappedMax' value must be < 2147483648, actual value '2147483648'"},
		{"CappedSizeNotNumber", `{"collMod": "c", "cappedSize": "1"}`, mongoerr.TypeMismatch, "TypeMismatch", "collMod.cappedSize"},
		{"DryRunNotBool", `{"collMod": "c", "dryRun": "x"}`, mongoerr.TypeMismatch, "TypeMismatch",
			"BSON field 'collMod.dryRun' is the wrong type 'string', expected type 'bool'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ddl.ParseCollMod(ext(t, tc.cmd))
			wantCode(t, err, tc.code, tc.codeName, tc.msg)
			if err == nil && a.Coll != "c" {
				t.Errorf("collection %q", a.Coll)
			}
		})
	}
	a, err := ddl.ParseCollMod(ext(t, `{"collMod": "c", "dryRun": true, "index": {"name": "a_1", "unique": true}}`))
	if err != nil || !a.DryRun || a.Index == nil || a.Index.Unique == nil || !*a.Index.Unique {
		t.Errorf("parsed %+v, %v", a, err)
	}
}
