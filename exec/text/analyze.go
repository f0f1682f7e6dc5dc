package text

import (
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/char/asciifolding"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
)

// Fold says which differences a tokenizer keeps: by default (text index version 3) terms
// are case folded and lose their diacritics; $caseSensitive and $diacriticSensitive keep them.
type Fold struct {
	CaseSensitive, DiacriticSensitive bool
}

// The stateless bleve components every analysis shares.
var (
	tokenizer = unicode.NewUnicodeTokenizer()
	lower     = lowercase.NewLowerCaseFilter()
	folder    = asciifolding.New()
)

// words returns the words of s in order (bleve's Unicode word segmentation: letters and
// numbers; spaces and punctuation separate words).
func words(s string) analysis.TokenStream {
	return tokenizer.Tokenize([]byte(s))
}

// foldString applies f's folding to a whole string: lower case unless case sensitive,
// diacritics removed unless diacritic sensitive (phrases are compared on it).
func foldString(s string, f Fold) string {
	b := []byte(s)
	if !f.CaseSensitive {
		b = lower.Filter(analysis.TokenStream{{Term: b}})[0].Term
	}
	if !f.DiacriticSensitive {
		b = folder.Filter(b)
	}
	return string(b)
}

// Terms returns the terms of s in language l, in order, as MongoDB's text tokenizer makes
// them: each word folded as f says, dropped when its fully folded form is one of l's stop
// words, then stemmed by l's stemmer. The default Fold gives an index's terms.
func Terms(l *Language, s string, f Fold) []string {
	toks := words(s)
	out := make(analysis.TokenStream, 0, len(toks))
	for _, t := range toks {
		full := []byte(foldString(string(t.Term), Fold{}))
		if l.stop != nil && l.stop[string(full)] {
			continue
		}
		switch {
		case !f.CaseSensitive && !f.DiacriticSensitive:
			t.Term = full
		default:
			t.Term = []byte(foldString(string(t.Term), f))
		}
		out = append(out, t)
	}
	if l.stem != nil {
		out = l.stem.Filter(out)
	}
	terms := make([]string, len(out))
	for i, t := range out {
		terms[i] = string(t.Term)
	}
	return terms
}
