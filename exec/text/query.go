package text

import (
	"slices"
	"strings"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Args is a $text operator's document: {$search, $language, $caseSensitive,
// $diacriticSensitive}. Language is "" when $language is absent (the index's default).
type Args struct {
	Search   string
	Language string
	Fold     Fold
}

// ParseArgs reads a $text operator's value with MongoDB's errors.
func ParseArgs(v bsoncore.Value) (Args, error) {
	var a Args
	d, ok := v.DocumentOK()
	if !ok {
		return a, mongoerr.New(mongoerr.BadValue, "$text expects an object")
	}
	if a.Search, ok = d.Lookup("$search").StringValueOK(); !ok {
		return a, mongoerr.New(mongoerr.TypeMismatch, "$search requires a string value")
	}
	want := 1
	if l := d.Lookup("$language"); l.Type != 0 {
		want++
		if a.Language, ok = l.StringValueOK(); !ok {
			return a, mongoerr.New(mongoerr.TypeMismatch, "$language requires a string value")
		}
	}
	for _, name := range [2]string{"$caseSensitive", "$diacriticSensitive"} {
		b := d.Lookup(name)
		if b.Type == 0 {
			continue
		}
		want++
		on, ok := b.BooleanOK()
		if !ok {
			return a, mongoerr.New(mongoerr.TypeMismatch, "%s requires a boolean value", name)
		}
		if name == "$caseSensitive" {
			a.Fold.CaseSensitive = on
		} else {
			a.Fold.DiacriticSensitive = on
		}
	}
	if elems, _ := d.Elements(); len(elems) != want {
		return a, mongoerr.New(mongoerr.BadValue, "extra fields in $text")
	}
	return a, nil
}

// Query is a $text search compiled against a text index: the terms its index scan reads,
// and what each document it fetches must also satisfy.
type Query struct {
	spec *Spec
	lang *Language
	fold Fold
	// Bounds are the folded, stemmed positive terms: the index keys the scan reads.
	Bounds []string
	// positive and negated are the terms under the query's fold; phrases and negPhrases
	// its quoted strings.
	positive, negated   []string
	phrases, negPhrases []string
}

// Compile parses a's $search in its language (the spec's default when none is named), as
// MongoDB's FTSQueryImpl does: words separated by spaces and punctuation are terms, "a
// quoted string" is a phrase, and a '-' that starts a word or phrase negates it (not
// inside a phrase, nor after a letter: "coffee-shop" is two terms).
func Compile(s *Spec, a Args) (*Query, error) {
	q := &Query{spec: s, lang: s.Default, fold: a.Fold}
	if a.Language != "" {
		var ok bool
		if q.lang, ok = LookupLanguage(a.Language); !ok {
			return nil, errLanguage(mongoerr.BadValue, a.Language)
		}
	}
	for _, tok := range splitSearch(a.Search) {
		switch {
		case tok.phrase && tok.negated:
			q.negPhrases = append(q.negPhrases, tok.text)
		case tok.phrase:
			q.phrases = append(q.phrases, tok.text)
			q.addTerms(tok.text, false)
		default:
			q.addTerms(tok.text, tok.negated)
		}
	}
	slices.Sort(q.Bounds)
	q.Bounds = slices.Compact(q.Bounds)
	return q, nil
}

// addTerms adds the terms of s, positive or negated.
func (q *Query) addTerms(s string, negated bool) {
	terms := Terms(q.lang, s, q.fold)
	if negated {
		q.negated = append(q.negated, terms...)
		return
	}
	q.positive = append(q.positive, terms...)
	q.Bounds = append(q.Bounds, Terms(q.lang, s, Fold{})...)
}

// searchToken is a word or a phrase of a $search string.
type searchToken struct {
	text            string
	phrase, negated bool
}

// splitSearch cuts a $search string into words and phrases. A word runs to the next
// space or quote; the tokenizer later splits it on punctuation.
func splitSearch(s string) []searchToken {
	var out []searchToken
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '"' || r == '-' && i+1 < len(rs) && rs[i+1] == '"':
			neg := r == '-'
			if neg {
				i++
			}
			end := i + 1
			for end < len(rs) && rs[end] != '"' {
				end++
			}
			if end >= len(rs) { // an unterminated quote: the rest is words
				i++
				continue
			}
			out = append(out, searchToken{text: string(rs[i+1 : end]), phrase: true, negated: neg})
			i = end + 1
		default:
			end := i
			for end < len(rs) && !unicode.IsSpace(rs[end]) && rs[end] != '"' {
				end++
			}
			w := string(rs[i:end])
			neg := strings.HasPrefix(w, "-")
			out = append(out, searchToken{text: strings.TrimLeft(w, "-"), negated: neg})
			i = end
		}
	}
	return out
}

// Match reports whether doc satisfies q beyond holding one of its bound terms, and its
// score: the sum of the scores doc's terms that are among the bounds have. A document
// with none of them scores 0 and does not match.
func (q *Query) Match(doc bsoncore.Document) (bool, float64, error) {
	fields, err := q.spec.Fields(doc)
	if err != nil {
		return false, 0, err
	}
	scores := map[string]float64{}
	for _, f := range fields {
		scoreString(f, scores)
	}
	score, found := 0.0, false
	for _, t := range q.Bounds {
		if sc, ok := scores[t]; ok {
			score, found = score+sc, true
		}
	}
	if !found {
		return false, 0, nil
	}
	sensitive := q.fold.CaseSensitive || q.fold.DiacriticSensitive
	if sensitive && !q.hasTerm(fields, q.positive) {
		return false, 0, nil
	}
	if q.hasTerm(fields, q.negated) {
		return false, 0, nil
	}
	for _, p := range q.phrases {
		if !q.hasPhrase(fields, p) {
			return false, 0, nil
		}
	}
	for _, p := range q.negPhrases {
		if q.hasPhrase(fields, p) {
			return false, 0, nil
		}
	}
	return true, score, nil
}

// hasTerm reports whether one of fields holds one of terms, under q's fold.
func (q *Query) hasTerm(fields []Field, terms []string) bool {
	if len(terms) == 0 {
		return false
	}
	for _, f := range fields {
		for _, t := range Terms(f.Lang, f.Text, q.fold) {
			if slices.Contains(terms, t) {
				return true
			}
		}
	}
	return false
}

// hasPhrase reports whether one of fields contains phrase, under q's fold.
func (q *Query) hasPhrase(fields []Field, phrase string) bool {
	p := foldString(phrase, q.fold)
	for _, f := range fields {
		if strings.Contains(foldString(f.Text, q.fold), p) {
			return true
		}
	}
	return false
}

// Parsed returns the query as explain's parsedTextQuery shows it: its positive terms (the
// index keys it reads), negated terms, phrases and negated phrases.
func (q *Query) Parsed() (terms, negated, phrases, negPhrases []string) {
	return q.Bounds, q.negated, q.phrases, q.negPhrases
}
