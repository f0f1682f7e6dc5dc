package collation

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// orderCases give two strings and the sign of their comparison under a collation.
var orderCases = []struct {
	name string
	spec bsoncore.Document
	a, b string
	want int
}{
	{"Strength1IgnoresCase", spec("en", "strength", 1), "a", "A", 0},
	{"Strength1IgnoresAccents", spec("en", "strength", 1), "a", "á", 0},
	{"Strength1LowerBeforeUpperNext", spec("en", "strength", 1), "a", "B", -1},
	{"Strength2IgnoresCase", spec("en", "strength", 2), "a", "A", 0},
	{"Strength2TellsAccents", spec("en", "strength", 2), "a", "á", -1},
	{"Strength2ABeforeB", spec("en", "strength", 2), "B", "a", 1},
	{"Strength3LowerFirst", spec("en"), "a", "A", -1},
	{"Strength3ABeforeUpperB", spec("en"), "a", "B", -1},
	{"Strength3UpperABeforeLowerB", spec("en"), "A", "b", -1},
	{"CaseFirstUpper", spec("en", "caseFirst", "upper"), "A", "a", -1},
	{"CaseFirstUpperKeepsLetters", spec("en", "caseFirst", "upper"), "a", "B", -1},
	{"CaseFirstLower", spec("en", "caseFirst", "lower"), "a", "A", -1},
	{"CaseLevelStrength1", spec("en", "strength", 1, "caseLevel", true), "a", "A", -1},
	{"CaseLevelStrength1IgnoresAccents", spec("en", "strength", 1, "caseLevel", true), "a", "á", 0},
	{"CaseLevelUpperFirst", spec("en", "strength", 1, "caseLevel", true, "caseFirst", "upper"), "A", "a", -1},
	{"NumericOrdering", spec("en", "numericOrdering", true), "10", "9", 1},
	{"NoNumericOrdering", spec("en"), "10", "9", -1},
	{"ShiftedIgnoresPunctuation", spec("en", "alternate", "shifted"), "a-b", "ab", 0},
	{"ShiftedIgnoresSpaces", spec("en", "alternate", "shifted"), "a b", "ab", 0},
	{"NonIgnorablePunctuation", spec("en"), "a-b", "ab", -1},
	{"ShiftedQuaternaryTellsPunctuation", spec("en", "alternate", "shifted", "strength", 4), "a-b", "ab", -1},
	{"Identical", spec("en", "strength", 5), "a", "a", 0},
	{"IdenticalTellsNormalForms", spec("en", "strength", 5), "\u00e9", "e\u0301", 0},
	{"SwedishAAfterZ", spec("sv"), "å", "z", 1},
	{"EnglishAringBeforeZ", spec("en"), "å", "z", -1},
	{"PrefixFirst", spec("en", "strength", 1), "ab", "abc", -1},
}

// spec builds {locale: loc, k1: v1, ...}.
func spec(loc string, kv ...any) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("locale", loc)
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(string)
		switch v := kv[i+1].(type) {
		case int:
			b.AppendInt32(k, int32(v))
		case bool:
			b.AppendBoolean(k, v)
		case string:
			b.AppendString(k, v)
		}
	}
	return b.Build()
}

func TestCollationKeyOrder(t *testing.T) {
	for _, tc := range orderCases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			ka, kb := c.Key(nil, []byte(tc.a)), c.Key(nil, []byte(tc.b))
			if got := bytes.Compare(ka, kb); got != tc.want {
				t.Fatalf("compare(%q, %q) = %d, want %d (keys % x, % x)", tc.a, tc.b, got, tc.want, ka, kb)
			}
			// Through bsonx: collated values compare and encode in the same order.
			va := bsonx.Collate(c, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, tc.a)})
			vb := bsonx.Collate(c, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, tc.b)})
			if got := bsonx.Compare(va, vb); got != tc.want {
				t.Fatalf("bsonx.Compare = %d, want %d", got, tc.want)
			}
			if got := bytes.Compare(bsonx.AppendKey(nil, va), bsonx.AppendKey(nil, vb)); got != tc.want {
				t.Fatalf("AppendKey order = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCollationSimpleIsNil(t *testing.T) {
	for _, d := range []bsoncore.Document{nil, spec("simple")} {
		c, err := Parse(d)
		if err != nil || c != nil || c.Collator() != nil {
			t.Fatalf("Parse(%v) = %v, %v; want nil, nil", d, c, err)
		}
	}
}

func BenchmarkCollationKey(b *testing.B) {
	for _, tc := range []struct {
		name string
		spec bsoncore.Document
	}{{"Strength2", spec("en", "strength", 2)}, {"Strength3", spec("en")}, {"CaseFirstUpper", spec("en", "caseFirst", "upper")}} {
		c, err := Parse(tc.spec)
		if err != nil {
			b.Fatal(err)
		}
		s := []byte("Grand Café de la Gare 12")
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var dst []byte
			for b.Loop() {
				dst = c.Key(dst[:0], s)
			}
		})
	}
}
