package collation

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

func TestCollationParseErrors(t *testing.T) {
	cases := []struct {
		name string
		spec bsoncore.Document
		code mongoerr.Code
		msg  string
	}{
		{"BadLocale", spec("xx"), mongoerr.BadValue, `Field 'locale' is invalid in: { locale: "xx" }`},
		{"EmptyLocale", spec(""), mongoerr.BadValue, `Field 'locale' cannot be the empty string in: { locale: "" }`},
		{"MissingLocale", bsoncore.NewDocumentBuilder().AppendInt32("strength", 2).Build(), mongoerr.Location40414, "BSON field 'collation.locale' is missing but a required field"},
		{"StrengthTooLarge", spec("en", "strength", 6), mongoerr.Location51024, "BSON field 'strength' value must be <= 5, actual value '6'"},
		{"UnknownField", spec("en", "foo", 1), mongoerr.Location40415, "BSON field 'collation.foo' is an unknown field."},
		{"CaseLevelType", spec("en", "caseLevel", "yes"), mongoerr.TypeMismatch, "BSON field 'collation.caseLevel' is the wrong type 'string', expected type 'bool'"},
		{"BadCaseFirst", spec("en", "caseFirst", "x"), mongoerr.BadValue, "Enumeration value 'x' for field 'collation.caseFirst' is not a valid value."},
		{"SimpleWithOptions", spec("simple", "strength", 1), mongoerr.FailedToParse, `If locale=simple, no other fields should be present in: { locale: "simple", strength: 1 }`},
		{"BackwardsAtStrength1", spec("en", "strength", 1, "backwards", true), mongoerr.BadValue, `'backwards' is invalid with 'strength' of 1 in: { locale: "en", caseLevel: false, caseFirst: "off", strength: 1, numericOrdering: false, alternate: "non-ignorable", maxVariable: "punct", normalization: false, backwards: true, version: "57.1" }`},
		{"CaseFirstAtStrength2", spec("en", "strength", 2, "caseFirst", "upper"), mongoerr.BadValue, `'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: { locale: "en", caseLevel: false, caseFirst: "upper", strength: 2, numericOrdering: false, alternate: "non-ignorable", maxVariable: "punct", normalization: false, backwards: false, version: "57.1" }`},
		{"WrongVersion", spec("en", "version", "1.0"), mongoerr.IncompatibleCollationVersion, `Requested collation version 1.0 but the only available collator version was 57.1. Requested collation spec: { locale: "en", version: "1.0" }`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.spec)
			var me *mongoerr.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a *mongoerr.Error", err)
			}
			if me.Code != tc.code || me.Message != tc.msg {
				t.Fatalf("got %v %q, want %v %q", me.Code, me.Message, tc.code, tc.msg)
			}
		})
	}
}

func TestCollationDocument(t *testing.T) {
	for _, tc := range []struct {
		spec bsoncore.Document
		want string
	}{
		{spec("en", "strength", 2), `{ locale: "en", caseLevel: false, caseFirst: "off", strength: 2, numericOrdering: false, alternate: "non-ignorable", maxVariable: "punct", normalization: false, backwards: false, version: "57.1" }`},
		{spec("fr_CA"), `{ locale: "fr_CA", caseLevel: false, caseFirst: "off", strength: 3, numericOrdering: false, alternate: "non-ignorable", maxVariable: "punct", normalization: false, backwards: true, version: "57.1" }`},
		{spec("da", "version", "57.1"), `{ locale: "da", caseLevel: false, caseFirst: "upper", strength: 3, numericOrdering: false, alternate: "non-ignorable", maxVariable: "punct", normalization: false, backwards: false, version: "57.1" }`},
	} {
		c, err := Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: c.Document()}); got != tc.want {
			t.Fatalf("got %s\nwant %s", got, tc.want)
		}
	}
}
