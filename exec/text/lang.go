package text

import (
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/da"
	"github.com/blevesearch/bleve/v2/analysis/lang/de"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/lang/es"
	"github.com/blevesearch/bleve/v2/analysis/lang/fi"
	"github.com/blevesearch/bleve/v2/analysis/lang/fr"
	"github.com/blevesearch/bleve/v2/analysis/lang/hu"
	"github.com/blevesearch/bleve/v2/analysis/lang/it"
	"github.com/blevesearch/bleve/v2/analysis/lang/nl"
	"github.com/blevesearch/bleve/v2/analysis/lang/no"
	"github.com/blevesearch/bleve/v2/analysis/lang/pt"
	"github.com/blevesearch/bleve/v2/analysis/lang/ro"
	"github.com/blevesearch/bleve/v2/analysis/lang/ru"
	"github.com/blevesearch/bleve/v2/analysis/lang/sv"
	"github.com/blevesearch/bleve/v2/analysis/lang/tr"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Language is one of the languages text indexes know: its stop words and its stemmer
// (bleve's lists and Snowball stemmers). The language "none" has neither.
type Language struct {
	// Name is MongoDB's name of the language ("english").
	Name string
	stop analysis.TokenMap
	stem analysis.TokenFilter
}

// langDef is how a language is built: its stop-word list and its stemmer's constructor.
type langDef struct {
	name, code string
	stop       []byte
	stem       func() analysis.TokenFilter
}

// langDefs are MongoDB's text-search languages (textIndexVersion 3), with their ISO 639-1
// codes. Portuguese has bleve's light stemmer, bleve having no Snowball one for it.
var langDefs = []langDef{
	{"danish", "da", da.DanishStopWords, func() analysis.TokenFilter { return da.NewDanishStemmerFilter() }},
	{"dutch", "nl", nl.DutchStopWords, func() analysis.TokenFilter { return nl.NewDutchStemmerFilter() }},
	{"english", "en", en.EnglishStopWords, func() analysis.TokenFilter { return en.NewEnglishStemmerFilter() }},
	{"finnish", "fi", fi.FinnishStopWords, func() analysis.TokenFilter { return fi.NewFinnishStemmerFilter() }},
	{"french", "fr", fr.FrenchStopWords, func() analysis.TokenFilter { return fr.NewFrenchStemmerFilter() }},
	{"german", "de", de.GermanStopWords, func() analysis.TokenFilter { return de.NewGermanStemmerFilter() }},
	{"hungarian", "hu", hu.HungarianStopWords, func() analysis.TokenFilter { return hu.NewHungarianStemmerFilter() }},
	{"italian", "it", it.ItalianStopWords, func() analysis.TokenFilter { return it.NewItalianStemmerFilter() }},
	{"norwegian", "nb", no.NorwegianStopWords, func() analysis.TokenFilter { return no.NewNorwegianStemmerFilter() }},
	{"portuguese", "pt", pt.PortugueseStopWords, func() analysis.TokenFilter { return pt.NewPortugueseLightStemmerFilter() }},
	{"romanian", "ro", ro.RomanianStopWords, func() analysis.TokenFilter { return ro.NewRomanianStemmerFilter() }},
	{"russian", "ru", ru.RussianStopWords, func() analysis.TokenFilter { return ru.NewRussianStemmerFilter() }},
	{"spanish", "es", es.SpanishStopWords, func() analysis.TokenFilter { return es.NewSpanishStemmerFilter() }},
	{"swedish", "sv", sv.SwedishStopWords, func() analysis.TokenFilter { return sv.NewSwedishStemmerFilter() }},
	{"turkish", "tr", tr.TurkishStopWords, func() analysis.TokenFilter { return tr.NewTurkishStemmerFilter() }},
	{"none", "none", nil, nil},
}

// languages maps every accepted spelling (name and code, lower case) to its Language,
// built on first use.
var languages = sync.OnceValue(func() map[string]*Language {
	m := make(map[string]*Language, 2*len(langDefs))
	for _, d := range langDefs {
		l := &Language{Name: d.name}
		if d.stop != nil {
			l.stop = analysis.NewTokenMap()
			if err := l.stop.LoadBytes(d.stop); err != nil {
				panic(err) // bleve's own lists: cannot fail
			}
			l.stem = d.stem()
		}
		m[d.name], m[d.code] = l, l
	}
	return m
})

// LookupLanguage returns the language named name (MongoDB's names and ISO codes, in any
// case), ok false when text search does not know it.
func LookupLanguage(name string) (*Language, bool) {
	l, ok := languages()[strings.ToLower(name)]
	return l, ok
}

// errLanguage is MongoDB's refusal of an unknown language: code is CannotCreateIndex in an
// index spec, BadValue in a query.
func errLanguage(code mongoerr.Code, name string) error {
	return mongoerr.New(code, "unsupported language: \"%s\" for text index version 3", name)
}
