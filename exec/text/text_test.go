package text

import (
	"fmt"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// doc builds a document from Extended JSON.
func doc(t testing.TB, js string) bsoncore.Document {
	t.Helper()
	var d bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(js), false, &d); err != nil {
		t.Fatal(err)
	}
	return bsoncore.Document(d)
}

// spec builds a Spec from a stored index spec in Extended JSON.
func spec(t testing.TB, js string) *Spec {
	t.Helper()
	s, err := ParseSpec(doc(t, js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var termsCases = []struct {
	name, lang, in string
	fold           Fold
	want           string
}{
	{"StopWordsAndStems", "english", "Baking a cake", Fold{}, "[bake cake]"},
	{"DiacriticsFolded", "english", "Café Con Leche", Fold{}, "[cafe con lech]"},
	{"CaseKept", "english", "Coffee Shopping", Fold{CaseSensitive: true}, "[Coffe Shop]"},
	{"DiacriticsKept", "english", "CAFÉ", Fold{DiacriticSensitive: true}, "[café]"},
	{"Punctuation", "english", "coffee-shop, (tea)!", Fold{}, "[coffe shop tea]"},
	{"Spanish", "es", "leches corriendo", Fold{}, "[lech corr]"},
	{"None", "none", "The Running", Fold{}, "[the running]"},
}

func TestTerms(t *testing.T) {
	for _, tc := range termsCases {
		t.Run(tc.name, func(t *testing.T) {
			l, ok := LookupLanguage(tc.lang)
			if !ok {
				t.Fatal(tc.lang)
			}
			if got := fmt.Sprint(Terms(l, tc.in, tc.fold)); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestScores checks MongoDB's formula: coefficients by share of the string's terms,
// halving repeats, the exact-string boost and weights.
func TestScores(t *testing.T) {
	s := spec(t, `{"key": {"_fts": "text", "_ftsx": 1}, "weights": {"a": 1, "b": 10}, "default_language": "english"}`)
	cases := []struct {
		doc  string
		want map[string]float64
	}{
		{`{"a": "Baking a cake"}`, map[string]float64{"bake": 0.75, "cake": 0.75}},
		{`{"a": "cake cake tea"}`, map[string]float64{"cake": 1.5 * (0.5*2/3 + 0.5), "tea": 0.5*1/3 + 0.5}},
		{`{"a": "tea"}`, map[string]float64{"tea": 1.1}},
		{`{"b": "tea time", "a": ["tea", "x"]}`, map[string]float64{"tea": 10*0.75 + 1.1, "time": 7.5, "x": 1.1}},
		{`{"c": "ignored"}`, map[string]float64{}},
	}
	for _, tc := range cases {
		got, err := s.Scores(doc(t, tc.doc))
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("%s: %v, %v", tc.doc, got, err)
		}
		for term, w := range tc.want {
			if math.Abs(got[term]-w) > 1e-9 {
				t.Errorf("%s: %s = %v, want %v", tc.doc, term, got[term], w)
			}
		}
	}
}

// TestLanguageOverride checks a document's language field and MongoDB's errors for it.
func TestLanguageOverride(t *testing.T) {
	s := spec(t, `{"key": {"_fts": "text", "_ftsx": 1}, "weights": {"a": 1}, "default_language": "english", "language_override": "lang"}`)
	got, err := s.Scores(doc(t, `{"a": "corriendo", "lang": "spanish"}`))
	if _, ok := got["corr"]; err != nil || !ok {
		t.Fatalf("spanish: %v, %v", got, err)
	}
	if _, err := s.Scores(doc(t, `{"a": "x", "lang": "klingon"}`)); err == nil {
		t.Fatal("unknown language accepted")
	}
	if _, err := s.Scores(doc(t, `{"a": "x", "lang": 1}`)); err == nil {
		t.Fatal("non-string language accepted")
	}
}

// TestCompile checks the parse of $search: terms, phrases, negations.
func TestCompile(t *testing.T) {
	s := spec(t, `{"key": {"_fts": "text", "_ftsx": 1}, "weights": {"a": 1}}`)
	cases := []struct{ search, want string }{
		{`coffee -shop`, "[coffe] [shop] [] []"},
		{`"coffee shop" cake`, "[cake coffe shop] [] [coffee shop] []"},
		{`tea -"green tea"`, "[tea] [] [] [green tea]"},
		{`coffee-shop`, "[coffe shop] [] [] []"},
		{`"unterminated tea`, "[tea untermin] [] [] []"},
		{`the and`, "[] [] [] []"},
	}
	for _, tc := range cases {
		q, err := Compile(s, Args{Search: tc.search})
		if err != nil {
			t.Fatal(err)
		}
		terms, neg, ph, nph := q.Parsed()
		if got := fmt.Sprint(terms, neg, ph, nph); got != tc.want {
			t.Errorf("%q: got %s, want %s", tc.search, got, tc.want)
		}
	}
}

// TestParseArgs checks MongoDB's errors for a malformed $text.
func TestParseArgs(t *testing.T) {
	for js, code := range map[string]int32{
		`{"t": 1}`:                                     2,
		`{"t": {"$search": 1}}`:                        14,
		`{"t": {"$search": "x", "y": 1}}`:              2,
		`{"t": {"$search": "x", "$caseSensitive": 1}}`: 14,
		`{"t": {"$search": "x", "$language": 1}}`:      14,
	} {
		_, err := ParseArgs(doc(t, js).Lookup("t"))
		if err == nil || !containsCode(err, code) {
			t.Errorf("%s: %v, want code %d", js, err, code)
		}
	}
}

// containsCode reports whether err is a MongoDB error with code.
func containsCode(err error, code int32) bool {
	e := mongoerr.As(err)
	return e != nil && int32(e.Code) == code
}

// TestMatch checks the search applied to a document, with its score.
func TestMatch(t *testing.T) {
	s := spec(t, `{"key": {"_fts": "text", "_ftsx": 1}, "weights": {"a": 1}}`)
	d := doc(t, `{"a": "Coffee Shopping"}`)
	for _, tc := range []struct {
		args  Args
		ok    bool
		score float64
	}{
		{Args{Search: "coffee"}, true, 0.75},
		{Args{Search: "coffee shop"}, true, 1.5},
		{Args{Search: "coffee -shop"}, false, 0},
		{Args{Search: `"coffee shop"`}, true, 1.5},
		{Args{Search: `"shop coffee"`}, false, 0},
		{Args{Search: "coffee", Fold: Fold{CaseSensitive: true}}, false, 0},
		{Args{Search: "Coffee -shop", Fold: Fold{CaseSensitive: true}}, true, 0.75},
		{Args{Search: "tea"}, false, 0},
	} {
		q, err := Compile(s, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		ok, score, err := q.Match(d)
		if err != nil || ok != tc.ok || score != tc.score {
			t.Errorf("%+v: %v %v %v, want %v %v", tc.args, ok, score, err, tc.ok, tc.score)
		}
	}
}
