package text

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Wildcard is the weights key (and key pattern field) of a text index on every string field.
const Wildcard = "$**"

// Spec is a text index as stored (MongoDB's fixed spec, Normalize): which string fields
// it indexes and with what weight, its languages and the ordinary fields around the text
// component of its key.
type Spec struct {
	// Weights maps each indexed path to its weight; Wildcard indexes every string field,
	// those not in Weights with weight 1.
	Weights  map[string]float64
	Wildcard bool
	// Default is default_language; Override is language_override, the field of a
	// (sub)document naming its own language.
	Default  *Language
	Override string
	// Before and After are the key pattern's fields before _fts and after _ftsx.
	Before, After []bsonx.IndexField
}

// Field is one string a document holds at an indexed path, with its weight and language.
type Field struct {
	Path   string
	Text   string
	Weight float64
	Lang   *Language
}

// ParseSpec reads a stored text index spec (key pattern {…, _fts: "text", _ftsx: 1, …},
// weights, default_language, language_override).
func ParseSpec(spec bsoncore.Document) (*Spec, error) {
	s := &Spec{Weights: map[string]float64{}, Override: "language"}
	key, _ := spec.Lookup("key").DocumentOK()
	elems, _ := key.Elements()
	after := false
	for _, el := range elems {
		switch el.Key() {
		case "_fts":
			continue
		case "_ftsx":
			after = true
			continue
		}
		n, _ := bsonx.NumberAsFloat64(el.Value())
		f := bsonx.IndexField{Path: el.Key(), Desc: n < 0}
		if after {
			s.After = append(s.After, f)
		} else {
			s.Before = append(s.Before, f)
		}
	}
	weights, _ := spec.Lookup("weights").DocumentOK()
	welems, _ := weights.Elements()
	for _, el := range welems {
		w, _ := bsonx.NumberAsFloat64(el.Value())
		if el.Key() == Wildcard {
			s.Wildcard = true
			continue
		}
		s.Weights[el.Key()] = w
	}
	lang := "english"
	if l, ok := spec.Lookup("default_language").StringValueOK(); ok {
		lang = l
	}
	var ok bool
	if s.Default, ok = LookupLanguage(lang); !ok {
		return nil, errLanguage(mongoerr.CannotCreateIndex, lang)
	}
	if o, ok := spec.Lookup("language_override").StringValueOK(); ok {
		s.Override = o
	}
	return s, nil
}

// Fields returns the strings doc holds at the spec's indexed paths, in document order,
// each in the language of the innermost (sub)document that names one in its override field.
func (s *Spec) Fields(doc bsoncore.Document) ([]Field, error) {
	var out []Field
	err := s.walk(doc, "", s.Default, &out)
	return out, err
}

// walk appends the indexed strings of doc, whose path is prefix, in language lang.
func (s *Spec) walk(doc bsoncore.Document, prefix string, lang *Language, out *[]Field) error {
	if v, err := doc.LookupErr(s.Override); err == nil {
		name, ok := v.StringValueOK()
		if !ok {
			return mongoerr.New(17261, "found language override field in document with non-string type")
		}
		if lang, ok = LookupLanguage(name); !ok {
			return mongoerr.New(17262, "language override unsupported: %s", name)
		}
	}
	elems, _ := doc.Elements()
	for _, el := range elems {
		if err := s.walkValue(prefix+el.Key(), el.Value(), lang, out, true); err != nil {
			return err
		}
	}
	return nil
}

// walkValue appends the indexed strings of value v at path (arrays expanded once).
func (s *Spec) walkValue(path string, v bsoncore.Value, lang *Language, out *[]Field, expand bool) error {
	switch v.Type {
	case bsoncore.TypeString:
		if w, ok := s.weight(path); ok {
			*out = append(*out, Field{Path: path, Text: v.StringValue(), Weight: w, Lang: lang})
		}
	case bsoncore.TypeEmbeddedDocument:
		if s.descends(path) {
			return s.walk(v.Document(), path+".", lang, out)
		}
	case bsoncore.TypeArray:
		if !expand {
			return nil
		}
		vals, _ := v.Array().Values()
		for _, e := range vals {
			if err := s.walkValue(path, e, lang, out, false); err != nil {
				return err
			}
		}
	default:
	}
	return nil
}

// weight returns the weight of path, ok false when the index does not hold it.
func (s *Spec) weight(path string) (float64, bool) {
	if w, ok := s.Weights[path]; ok {
		return w, true
	}
	return 1, s.Wildcard
}

// descends reports whether some indexed path lies under path.
func (s *Spec) descends(path string) bool {
	if s.Wildcard {
		return true
	}
	for p := range s.Weights {
		if strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}

// Scores returns the score of each term of doc: MongoDB's formula (fts_spec.cpp) summed
// over the strings holding it. In one string, the k-th occurrence of a term adds 1/2^(k-1)
// to its frequency; the string's contribution is weight × frequency × (0.5 × count/terms
// + 0.5), times 1.1 when the whole string is the term.
func (s *Spec) Scores(doc bsoncore.Document) (map[string]float64, error) {
	fields, err := s.Fields(doc)
	if err != nil {
		return nil, err
	}
	scores := map[string]float64{}
	for _, f := range fields {
		scoreString(f, scores)
	}
	return scores, nil
}

// termStat is one term's occurrences in one string.
type termStat struct {
	count     int
	exp, freq float64
}

// scoreString adds the scores of the terms of one string to scores.
func scoreString(f Field, scores map[string]float64) {
	terms := Terms(f.Lang, f.Text, Fold{})
	stats := map[string]*termStat{}
	for _, t := range terms {
		st := stats[t]
		if st == nil {
			st = &termStat{}
			stats[t] = st
		}
		if st.exp == 0 {
			st.exp = 1
		} else {
			st.exp *= 2
		}
		st.count++
		st.freq += 1 / st.exp
	}
	for t, st := range stats {
		coeff := 0.5*float64(st.count)/float64(len(terms)) + 0.5
		adjust := 1.0
		if len(f.Text) == len(t) && strings.EqualFold(f.Text, t) {
			adjust += 0.1
		}
		scores[t] += f.Weight * st.freq * coeff * adjust
	}
}

// SortedTerms returns the terms of scores in ascending order.
func SortedTerms(scores map[string]float64) []string {
	out := make([]string, 0, len(scores))
	for t := range scores {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
