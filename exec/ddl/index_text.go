package ddl

import (
	"bytes"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/text"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// textIndexVersion is the textIndexVersion cleave builds (MongoDB's current).
const textIndexVersion = 3

// maxTextWeight bounds a text field's weight (MongoDB's MAX_WORD_WEIGHT).
const maxTextWeight = 100000

// checkTextOption checks the type of a text index option; validateText checks the rest
// with the key pattern.
func checkTextOption(key string, v bsoncore.Value) (bool, error) {
	switch key {
	case "weights":
		if s, ok := v.StringValueOK(); v.Type != bsoncore.TypeEmbeddedDocument && (!ok || s != text.Wildcard) {
			return false, mongoerr.New(17284, "text index option 'weights' must be an object")
		}
	case "default_language":
		if v.Type != bsoncore.TypeString {
			return false, mongoerr.New(17263, "default_language needs a string type")
		}
	case "language_override":
		if v.Type != bsoncore.TypeString {
			return false, mongoerr.New(17136, "language_override is not valid: %s", bsonx.ShellString(v))
		}
	case "textIndexVersion":
		if !bsonx.IsNumber(v.Type) {
			return false, mongoerr.New(17364, "attempt to use unsupported textIndexVersion %s; versions supported: 3, 2, 1", bsonx.ShellString(v))
		}
	}
	return true, nil
}

// validateText fixes a text index's spec as MongoDB's FTSSpec::fixSpec does: the key
// pattern becomes {prefix fields…, _fts: "text", _ftsx: 1, suffix fields…} and the spec
// holds weights (by field name, as integers), default_language, language_override and
// textIndexVersion. The text fields must be adjacent; the others ascending or descending.
func validateText(x *store.Index, elems []bsoncore.Element) error {
	if !catalog.IsText(x.Key) {
		return checkNoTextOptions(x)
	}
	if c, ok := x.Spec.Lookup("collation").DocumentOK(); ok && !bytes.Equal(c, simpleCollation) {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Index type 'text' does not support collation: %s",
			bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: c}))
	}
	weights := map[string]int32{}
	kb := bsoncore.NewDocumentBuilder()
	state := 0 // 0: before the text fields, 1: in them, 2: after them
	for _, el := range elems {
		s, isString := el.Value().StringValueOK()
		if name := el.Key(); name == "_fts" || name == "_ftsx" {
			return validateFixedText(x, elems)
		}
		switch {
		case isString && s == "text":
			if state == 2 {
				return mongoerr.New(17389, "'text' fields in index must all be adjacent")
			}
			if state == 0 {
				kb.AppendString("_fts", "text").AppendInt32("_ftsx", 1)
			}
			state, weights[el.Key()] = 1, 1
		case isString:
			return mongoerr.New(mongoerr.CannotCreateIndex, "Can't use more than one index plugin for a single index.")
		default:
			if n := mustFloat(el.Value()); n != 1 && n != -1 {
				return mongoerr.New(17273, "expected value 1 or -1 for non-text key in compound index")
			}
			if state == 1 {
				state = 2
			}
			kb.AppendInt32(el.Key(), int32(mustFloat(el.Value())))
		}
	}
	x.Key = kb.Build()
	return fixTextSpec(x, weights)
}

// validateFixedText accepts a key pattern that is already fixed ({_fts: "text", _ftsx: 1}),
// as listIndexes shows it: its fields come from the spec's weights.
func validateFixedText(x *store.Index, elems []bsoncore.Element) error {
	for i, el := range elems {
		if el.Key() == "_fts" && (i+1 >= len(elems) || elems[i+1].Key() != "_ftsx") {
			return mongoerr.New(17288, "expected _ftsx after _fts")
		}
	}
	return fixTextSpec(x, map[string]int32{})
}

// fixTextSpec rewrites x's spec with the text options in MongoDB's stored form, the
// weights given in the spec added to those of the key pattern.
func fixTextSpec(x *store.Index, weights map[string]int32) error {
	lang, override, version := "english", "language", int32(textIndexVersion)
	if x.Spec != nil {
		if err := specWeights(x.Spec.Lookup("weights"), weights); err != nil {
			return err
		}
		if s, ok := x.Spec.Lookup("default_language").StringValueOK(); ok {
			lang = s
		}
		if s, ok := x.Spec.Lookup("language_override").StringValueOK(); ok {
			override = s
		}
		if v := x.Spec.Lookup("textIndexVersion"); v.Type != 0 {
			version = int32(mustFloat(v))
		}
	}
	if _, ok := text.LookupLanguage(lang); !ok {
		return mongoerr.New(mongoerr.CannotCreateIndex, "unsupported language: \"%s\" for text index version 3", lang)
	}
	if override == "" || override[0] == '$' || strings.Contains(override, ".") {
		return mongoerr.New(17136, "language_override is not valid: %s", override)
	}
	switch version {
	case textIndexVersion:
	case 1, 2:
		return mongoerr.New(mongoerr.NotImplemented, "textIndexVersion %d is not supported by cleave (version 3 is)", version)
	default:
		return mongoerr.New(17364, "attempt to use unsupported textIndexVersion %d; versions supported: 3, 2, 1", version)
	}
	if len(weights) == 0 {
		return mongoerr.New(mongoerr.CannotCreateIndex, "text index needs at least one field")
	}
	x.Spec = textSpec(x.Spec, weights, lang, override)
	return nil
}

// specWeights adds the spec's weights option (a document, or "$**") to weights.
func specWeights(v bsoncore.Value, weights map[string]int32) error {
	if s, ok := v.StringValueOK(); ok && s == text.Wildcard {
		weights[text.Wildcard] = 1
		return nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil
	}
	elems, _ := d.Elements()
	for _, el := range elems {
		w, ok := bsonx.NumberAsFloat64(el.Value())
		if !ok {
			return mongoerr.New(17283, "weight for text index needs numeric type")
		}
		if int32(w) <= 0 || w >= maxTextWeight {
			return mongoerr.New(16674, "score for word too high")
		}
		weights[el.Key()] = int32(w)
	}
	return nil
}

// textSpec returns spec with the text options replaced by their stored form.
func textSpec(spec bsoncore.Document, weights map[string]int32, lang, override string) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	if spec != nil {
		elems, _ := spec.Elements()
		for _, el := range elems {
			switch el.Key() {
			case "weights", "default_language", "language_override", "textIndexVersion":
				continue
			}
			b = append(b, el...)
		}
	}
	names := make([]string, 0, len(weights))
	for name := range weights {
		names = append(names, name)
	}
	slices.Sort(names)
	widx, wb := bsoncore.AppendDocumentStart(nil)
	for _, name := range names {
		wb = bsoncore.AppendInt32Element(wb, name, weights[name])
	}
	wdoc, _ := bsoncore.AppendDocumentEnd(wb, widx)
	b = bsoncore.AppendDocumentElement(b, "weights", wdoc)
	b = bsoncore.AppendStringElement(b, "default_language", lang)
	b = bsoncore.AppendStringElement(b, "language_override", override)
	b = bsoncore.AppendInt32Element(b, "textIndexVersion", textIndexVersion)
	out, _ := bsoncore.AppendDocumentEnd(b, idx)
	return out
}

// checkNoTextOptions refuses text options on an index that is not a text index.
func checkNoTextOptions(x *store.Index) error {
	if x.Spec == nil {
		return nil
	}
	for _, name := range [...]string{"weights", "default_language", "language_override", "textIndexVersion"} {
		if x.Spec.Lookup(name).Type != 0 {
			return mongoerr.New(mongoerr.InvalidIndexSpecificationOption, "Index key pattern %s must include a 'text' field to use the '%s' option",
				bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: x.Key}), name)
		}
	}
	return nil
}
