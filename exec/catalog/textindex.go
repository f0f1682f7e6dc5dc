package catalog

import (
	"slices"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/text"
	"github.com/cleavedb/cleave/store"
)

// TextIndex is the compiled form of a text index (key pattern {…, _fts: "text", _ftsx: 1,
// …}, its fields in the spec's weights). Like MongoDB's, an entry's key is the keys of the
// fields before the text component, one term of the document (case and diacritic folded,
// stop words dropped, stemmed: exec/text), the term's score in the document as a double,
// then the keys of the fields after. A document with no term has no entries.
type TextIndex struct {
	Spec *text.Spec
}

// IsText reports whether key pattern key is a text index's, as given ({a: "text"}) or as
// stored ({_fts: "text", _ftsx: 1}).
func IsText(key bsoncore.Document) bool {
	if hasPlugin(key, "text") {
		return true
	}
	_, err := key.LookupErr("_fts")
	return err == nil
}

// TermKey appends the encoding of term as the text component of an index key.
func TermKey(dst []byte, term string) []byte {
	return bsonx.AppendKey(dst, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, term)})
}

// compileTextIndex builds the Index of text index x; Fields stays empty, so that no
// field-wise planning applies to it.
func compileTextIndex(x *store.Index) (*Index, error) {
	specDoc := x.Spec
	if specDoc == nil {
		specDoc = bsoncore.NewDocumentBuilder().Build()
	}
	full := bsoncore.NewDocumentBuilder().AppendDocument("key", x.Key)
	elems, _ := specDoc.Elements()
	for _, el := range elems {
		full.AppendValue(el.Key(), el.Value())
	}
	spec, err := text.ParseSpec(full.Build())
	if err != nil {
		return nil, err
	}
	xi := &Index{Meta: x, Text: &TextIndex{Spec: spec}, Use: new(atomic.Pointer[IndexUse])}
	if x.Spec != nil {
		xi.Hidden = SpecBool(x.Spec, "hidden")
		if pf, ok := x.Spec.Lookup("partialFilterExpression").DocumentOK(); ok {
			if xi.Partial, err = match.Compile(pf, nil); err != nil {
				return nil, err
			}
		}
	}
	return xi, nil
}

// keys calls fn with doc's entries in ascending order.
func (t *TextIndex) keys(doc bsoncore.Document, fn func(key []byte) error) error {
	scores, err := t.Spec.Scores(doc)
	if err != nil || len(scores) == 0 {
		return err
	}
	before, err := fieldKeys(doc, t.Spec.Before)
	if err != nil {
		return err
	}
	after, err := fieldKeys(doc, t.Spec.After)
	if err != nil {
		return err
	}
	var out [][]byte
	for _, b := range before {
		for _, term := range text.SortedTerms(scores) {
			k := TermKey(append([]byte(nil), b...), term)
			k = bsonx.AppendKey(k, bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, scores[term])})
			for _, a := range after {
				out = append(out, append(slices.Clip(k), a...))
			}
		}
	}
	return emitDistinct(out, fn)
}

// fieldKeys returns the keys doc has for the ordinary fields fs ({nil} when there are none).
func fieldKeys(doc bsoncore.Document, fs []bsonx.IndexField) ([][]byte, error) {
	if len(fs) == 0 {
		return [][]byte{nil}, nil
	}
	var out [][]byte
	_, err := bsonx.AppendIndexKeys(doc, fs, func(k []byte) error {
		out = append(out, append([]byte(nil), k...))
		return nil
	})
	return out, keyError(err)
}
