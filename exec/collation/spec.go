package collation

import (
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Version is the collator version MongoDB 7.0 reports (its ICU's).
const Version = "57.1"

// Spec is a collation with every option resolved, as MongoDB's CollationSpec.
type Spec struct {
	Locale          string
	CaseLevel       bool
	CaseFirst       string // "upper", "lower" or "off"
	Strength        int    // 1 to 5
	NumericOrdering bool
	Alternate       string // "non-ignorable" or "shifted"
	MaxVariable     string // "punct" or "space"
	Normalization   bool
	Backwards       bool
}

// Collation is a parsed, non-simple collation. A nil *Collation is the simple collation.
// It is immutable and safe for concurrent use.
type Collation struct {
	Spec
	doc bsoncore.Document // the full spec, as listCollections shows it
	key keyer
}

// Document returns the full collation document (nil for the simple collation).
func (c *Collation) Document() bsoncore.Document {
	if c == nil {
		return nil
	}
	return c.doc
}

// Collator returns c as a bsonx.Collator: nil (an untyped nil interface) for the simple
// collation, so that bsonx's fast paths see it.
func (c *Collation) Collator() bsonx.Collator {
	if c == nil {
		return nil
	}
	return c
}

// Equal reports whether a and b collate alike (both simple, or the same spec).
func Equal(a, b *Collation) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Spec == b.Spec
}

// cache holds the collations parsed so far, by full spec: building a collator loads
// x/text's tables, so every query with the same collation shares one.
var cache sync.Map // Spec → *Collation

// Parse parses a collation document as MongoDB does: nil (and {locale: "simple"}) is the
// simple collation, returned as nil; a bad document is MongoDB's error.
func Parse(d bsoncore.Document) (*Collation, error) {
	if d == nil {
		return nil, nil
	}
	s, fields, err := parseFields(d)
	if err != nil {
		return nil, err
	}
	if s.Locale == "simple" {
		if fields > 1 {
			return nil, mongoerr.New(mongoerr.FailedToParse, "If locale=simple, no other fields should be present in: %s", shell(d))
		}
		return nil, nil
	}
	if err := s.validate(d); err != nil {
		return nil, err
	}
	if c, ok := cache.Load(s); ok {
		return c.(*Collation), nil
	}
	k, err := newKeyer(&s)
	if err != nil {
		return nil, err
	}
	c := &Collation{Spec: s, doc: s.document(), key: k}
	actual, _ := cache.LoadOrStore(s, c)
	return actual.(*Collation), nil
}

// given records which options a collation document names.
type given struct{ caseFirst, strength, alternate, backwards bool }

// parseFields reads the fields of d as MongoDB's IDL Collation struct does, then fills the
// options d leaves out from the locale's defaults. It returns the number of fields.
func parseFields(d bsoncore.Document) (Spec, int, error) {
	s := Spec{CaseFirst: "off", Strength: 3, Alternate: "non-ignorable", MaxVariable: "punct"}
	var g given
	hasLocale, n := false, 0
	var version string
	it := bsonx.Elements(d)
	for el, ok := it.Next(); ok; el, ok = it.Next() {
		n++
		v := el.Value()
		var err error
		switch k := el.Key(); k {
		case "locale":
			s.Locale, err = args.String("collation", k, v)
			hasLocale = true
		case "caseLevel":
			s.CaseLevel, err = boolField(k, v)
		case "caseFirst":
			s.CaseFirst, err = enumField(k, v, "upper", "lower", "off")
			g.caseFirst = true
		case "strength":
			s.Strength, err = strengthField(v)
			g.strength = true
		case "numericOrdering":
			s.NumericOrdering, err = boolField(k, v)
		case "alternate":
			s.Alternate, err = enumField(k, v, "non-ignorable", "shifted")
			g.alternate = true
		case "maxVariable":
			s.MaxVariable, err = enumField(k, v, "punct", "space")
		case "normalization":
			s.Normalization, err = boolField(k, v)
		case "backwards":
			if v.Type != bsoncore.TypeBoolean {
				err = mongoerr.New(mongoerr.TypeMismatch, "Field 'backwards' should be a boolean value, but found: %s", bsonx.TypeName(v.Type))
			}
			s.Backwards, g.backwards = v.Type == bsoncore.TypeBoolean && v.Boolean(), true
		case "version":
			version, err = args.String("collation", k, v)
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field 'collation.%s' is an unknown field.", k)
		}
		if err != nil {
			return s, n, err
		}
	}
	if !hasLocale {
		return s, n, args.Missing("collation", "locale")
	}
	if version != "" && version != Version && s.Locale != "simple" {
		return s, n, mongoerr.New(mongoerr.IncompatibleCollationVersion,
			"Requested collation version %s but the only available collator version was %s. Requested collation spec: %s", version, Version, shell(d))
	}
	if def := localeDefaults[s.Locale]; def != nil {
		var dflt Spec
		def(&dflt)
		if !g.caseFirst && dflt.CaseFirst != "" {
			s.CaseFirst = dflt.CaseFirst
		}
		if !g.alternate && dflt.Alternate != "" {
			s.Alternate = dflt.Alternate
		}
		if !g.backwards && dflt.Backwards {
			s.Backwards = true
		}
	}
	return s, n, nil
}

// validate checks the locale and the combinations of options MongoDB refuses.
func (s *Spec) validate(d bsoncore.Document) error {
	if s.Locale == "" {
		return mongoerr.New(mongoerr.BadValue, "Field 'locale' cannot be the empty string in: %s", shell(d))
	}
	if strings.IndexByte(s.Locale, 0) >= 0 {
		return mongoerr.New(mongoerr.BadValue, "Field 'locale' cannot contain null byte. Collation spec: %s", shell(d))
	}
	tag, ok := locales[s.Locale]
	if !ok {
		return mongoerr.New(mongoerr.BadValue, "Field 'locale' is invalid in: %s", shell(d))
	}
	if tag == "" {
		return mongoerr.New(mongoerr.NotImplemented, "the collation locale %q is not supported by cleave", s.Locale)
	}
	full := shell(s.document())
	if s.Backwards && s.Strength == 1 {
		return mongoerr.New(mongoerr.BadValue, "'backwards' is invalid with 'strength' of 1 in: %s", full)
	}
	if s.CaseFirst != "off" && !s.CaseLevel && s.Strength <= 2 {
		return mongoerr.New(mongoerr.BadValue, "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: %s", full)
	}
	if s.Alternate == "shifted" && s.MaxVariable == "space" {
		return mongoerr.New(mongoerr.NotImplemented, "a collation with alternate \"shifted\" and maxVariable \"space\" is not supported by cleave")
	}
	return nil
}

// document builds the full collation document in MongoDB's field order.
func (s *Spec) document() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendString("locale", s.Locale).
		AppendBoolean("caseLevel", s.CaseLevel).
		AppendString("caseFirst", s.CaseFirst).
		AppendInt32("strength", int32(s.Strength)).
		AppendBoolean("numericOrdering", s.NumericOrdering).
		AppendString("alternate", s.Alternate).
		AppendString("maxVariable", s.MaxVariable).
		AppendBoolean("normalization", s.Normalization).
		AppendBoolean("backwards", s.Backwards).
		AppendString("version", Version).
		Build()
}

// boolField reads a bool option (IDL type bool: a boolean and nothing else).
func boolField(k string, v bsoncore.Value) (bool, error) {
	if v.Type != bsoncore.TypeBoolean {
		return false, args.WrongType("collation", k, v.Type, "bool")
	}
	return v.Boolean(), nil
}

// enumField reads a string option with a fixed set of values.
func enumField(k string, v bsoncore.Value, values ...string) (string, error) {
	s, err := args.String("collation", k, v)
	if err != nil {
		return "", err
	}
	for _, x := range values {
		if s == x {
			return s, nil
		}
	}
	return "", mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'collation.%s' is not a valid value.", s, k)
}

// strengthField reads strength (IDL safeInt with validator {gte: 0, lte: 5}; 0 is then
// refused by the collator factory).
func strengthField(v bsoncore.Value) (int, error) {
	n, err := args.Int64("collation", "strength", v)
	if err != nil {
		return 0, err
	}
	switch {
	case n > 5:
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field 'strength' value must be <= 5, actual value '%d'", n)
	case n < 0:
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field 'strength' value must be >= 0, actual value '%d'", n)
	case n == 0:
		return 0, mongoerr.New(mongoerr.FailedToParse, "Field 'strength' must be an integer 1 through 5. Got: 0")
	}
	return int(n), nil
}

// shell prints a document as MongoDB's messages do.
func shell(d bsoncore.Document) string {
	return bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
}
