package match

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// ivString renders intervals as "[lo, hi)" lists for comparison.
func ivString(ivs []Interval) string {
	var sb strings.Builder
	for i, iv := range ivs {
		if i > 0 {
			sb.WriteString(" ")
		}
		l, r := "(", ")"
		if iv.LoInclusive {
			l = "["
		}
		if iv.HiInclusive {
			r = "]"
		}
		fmt.Fprintf(&sb, "%s%s, %s%s", l, iv.Lo.String(), iv.Hi.String(), r)
	}
	return sb.String()
}

// TestFilterEqualities checks Equalities and, where key differs from want, KeyEqualities
// (null is a point for a shard key).
func TestFilterEqualities(t *testing.T) {
	for _, tc := range []struct {
		name, filter, path string
		want               string // values joined by " ", or "-" for ok == false
		key                string // KeyEqualities' answer when it differs from want
	}{
		{"Plain", `{"a": 5}`, "a", `{"$numberInt":"5"}`, ""},
		{"Eq", `{"a": {"$eq": "x"}}`, "a", `"x"`, ""},
		{"In", `{"a": {"$in": [3, 1, 2, 1.0]}}`, "a", `{"$numberInt":"1"} {"$numberInt":"2"} {"$numberInt":"3"}`, ""},
		{"Smallest", `{"a": {"$in": [1, 2]}, "$and": [{"a": 2}]}`, "a", `{"$numberInt":"2"}`, ""},
		{"Dotted", `{"a.b": "k"}`, "a.b", `"k"`, ""},
		{"OtherPath", `{"a": 5}`, "b", "-", ""},
		{"Null", `{"a": null}`, "a", "-", "null"},
		{"EqNull", `{"a": {"$eq": null}, "b": 1}`, "a", "-", "null"},
		{"InNull", `{"a": {"$in": [1, null]}}`, "a", "-", `null {"$numberInt":"1"}`},
		{"Array", `{"a": [1]}`, "a", "-", ""},
		{"InRegex", `{"a": {"$in": [1, {"$regularExpression": {"pattern": "x", "options": ""}}]}}`, "a", "-", ""},
		{"Range", `{"a": {"$gt": 1}}`, "a", "-", ""},
		{"LteNull", `{"a": {"$lte": null}}`, "a", "-", ""},
		{"InOr", `{"$or": [{"a": 1}, {"a": 2}]}`, "a", "-", ""},
		{"Ne", `{"a": {"$ne": 1}}`, "a", "-", ""},
		{"NeNull", `{"a": {"$ne": null}}`, "a", "-", ""},
		{"EmptyIn", `{"a": {"$in": []}}`, "a", "", ""},
		{"Doc", `{"a": {"b": 1}}`, "a", `{"b": {"$numberInt":"1"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(doc(t, tc.filter), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := valuesString(f.Equalities(tc.path)); got != tc.want {
				t.Errorf("Equalities(%q) = %s, want %s", tc.path, got, tc.want)
			}
			wantKey := tc.want
			if tc.key != "" {
				wantKey = tc.key
			}
			if got := valuesString(f.KeyEqualities(tc.path)); got != wantKey {
				t.Errorf("KeyEqualities(%q) = %s, want %s", tc.path, got, wantKey)
			}
		})
	}
}

// valuesString renders an Equalities answer: the values joined by " ", or "-" when !ok.
func valuesString(vals []bsoncore.Value, ok bool) string {
	if !ok {
		return "-"
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = v.String()
	}
	return strings.Join(parts, " ")
}

func TestFilterIntervals(t *testing.T) {
	for _, tc := range []struct {
		name, filter, path    string
		want, wantNonMultikey string // "-" for ok == false
	}{
		{"Gt", `{"a": {"$gt": 5}}`, "a",
			`({"$numberInt":"5"}, {"$numberDouble":"Infinity"}]`, `({"$numberInt":"5"}, {"$numberDouble":"Infinity"}]`},
		{"Lte", `{"a": {"$lte": 5}}`, "a",
			`[{"$numberDouble":"-Infinity"}, {"$numberInt":"5"}]`, `[{"$numberDouble":"-Infinity"}, {"$numberInt":"5"}]`},
		{"StringBracket", `{"a": {"$gte": "m"}}`, "a", `["m", {})`, `["m", {})`},
		{"RangePair", `{"a": {"$gte": 1, "$lt": 5}}`, "a",
			`[{"$numberInt":"1"}, {"$numberDouble":"Infinity"}]`, `[{"$numberInt":"1"}, {"$numberInt":"5"})`},
		{"EqPreferred", `{"a": {"$gt": 1}, "$and": [{"a": 3}]}`, "a",
			`[{"$numberInt":"3"}, {"$numberInt":"3"}]`, `[{"$numberInt":"3"}, {"$numberInt":"3"}]`},
		{"InSortedMerged", `{"a": {"$in": [3, 1, 1.0, "x"]}}`, "a",
			`[{"$numberInt":"1"}, {"$numberInt":"1"}] [{"$numberInt":"3"}, {"$numberInt":"3"}] ["x", "x"]`,
			`[{"$numberInt":"1"}, {"$numberInt":"1"}] [{"$numberInt":"3"}, {"$numberInt":"3"}] ["x", "x"]`},
		{"Disjoint", `{"a": {"$gt": 5, "$lt": 3}}`, "a",
			`({"$numberInt":"5"}, {"$numberDouble":"Infinity"}]`, ``},
		{"RegexPrefix", `{"a": {"$regex": "^x"}}`, "a", `["x", "y") [{"$regularExpression":{"pattern":"^x","options":""}}, {"$regularExpression":{"pattern":"^x","options":""}}]`,
			`["x", "y") [{"$regularExpression":{"pattern":"^x","options":""}}, {"$regularExpression":{"pattern":"^x","options":""}}]`},
		// Without a literal prefix: every string (a scan tests the regex on each key).
		{"RegexUnanchored", `{"a": {"$regex": "x"}}`, "a",
			`["", {}) [{"$regularExpression":{"pattern":"x","options":""}}, {"$regularExpression":{"pattern":"x","options":""}}]`,
			`["", {}) [{"$regularExpression":{"pattern":"x","options":""}}, {"$regularExpression":{"pattern":"x","options":""}}]`},
		{"RegexCaseless", `{"a": {"$regex": "^x", "$options": "i"}}`, "a",
			`["", {}) [{"$regularExpression":{"pattern":"^x","options":"i"}}, {"$regularExpression":{"pattern":"^x","options":"i"}}]`,
			`["", {}) [{"$regularExpression":{"pattern":"^x","options":"i"}}, {"$regularExpression":{"pattern":"^x","options":"i"}}]`},
		{"RegexWithRange", `{"a": {"$regex": "^x", "$lt": "xm"}}`, "a",
			`["x", "y") [{"$regularExpression":{"pattern":"^x","options":""}}, {"$regularExpression":{"pattern":"^x","options":""}}]`,
			`["x", "xm")`},
		{"InWithRegex", `{"a": {"$in": [1, {"$regularExpression": {"pattern": "^ab", "options": ""}}]}}`, "a",
			`[{"$numberInt":"1"}, {"$numberInt":"1"}] ["ab", "ac") [{"$regularExpression":{"pattern":"^ab","options":""}}, {"$regularExpression":{"pattern":"^ab","options":""}}]`,
			`[{"$numberInt":"1"}, {"$numberInt":"1"}] ["ab", "ac") [{"$regularExpression":{"pattern":"^ab","options":""}}, {"$regularExpression":{"pattern":"^ab","options":""}}]`},
		{"InWithUnanchoredRegex", `{"a": {"$in": [1, {"$regularExpression": {"pattern": "b", "options": ""}}]}}`, "a",
			`[{"$numberInt":"1"}, {"$numberInt":"1"}] ["", {}) [{"$regularExpression":{"pattern":"b","options":""}}, {"$regularExpression":{"pattern":"b","options":""}}]`,
			`[{"$numberInt":"1"}, {"$numberInt":"1"}] ["", {}) [{"$regularExpression":{"pattern":"b","options":""}}, {"$regularExpression":{"pattern":"b","options":""}}]`},
		// One element satisfies every operator of an $elemMatch: bounds intersect even multikey.
		{"ElemMatchRange", `{"a": {"$elemMatch": {"$gte": 1, "$lt": 5, "$ne": 3}}}`, "a",
			`[{"$numberInt":"1"}, {"$numberInt":"5"})`, `[{"$numberInt":"1"}, {"$numberInt":"5"})`},
		{"ElemMatchObject", `{"a": {"$elemMatch": {"b": 1}}}`, "a", "-", "-"},
		{"NullGte", `{"a": {"$gte": null}}`, "a", "-", "-"},
		// null: a missing field's key; undefined: an empty array's.
		{"ExistsFalse", `{"a": {"$exists": false}}`, "a", `[null, null]`, `[null, null]`},
		{"ExistsTrue", `{"a": {"$exists": true}}`, "a", "-", "-"},
		{"NullEq", `{"a": null}`, "a", `[{"$undefined":true}, {"$undefined":true}] [null, null]`, `[{"$undefined":true}, {"$undefined":true}] [null, null]`},
		{"InWithNull", `{"a": {"$in": [2, null]}}`, "a", `[{"$undefined":true}, {"$undefined":true}] [null, null] [{"$numberInt":"2"}, {"$numberInt":"2"}]`,
			`[{"$undefined":true}, {"$undefined":true}] [null, null] [{"$numberInt":"2"}, {"$numberInt":"2"}]`},
		{"NaNGt", `{"a": {"$gt": {"$numberDouble": "NaN"}}}`, "a", ``, ``},
		{"OrOfRanges", `{"$or": [{"a": {"$gte": 1, "$lt": 2}}, {"a": {"$gt": 5, "$lte": 6}}]}`, "a",
			`[{"$numberInt":"1"}, {"$numberDouble":"Infinity"}]`,
			`[{"$numberInt":"1"}, {"$numberInt":"2"}) ({"$numberInt":"5"}, {"$numberInt":"6"}]`},
		{"OrPointsMerged", `{"$or": [{"a": 3}, {"a": {"$in": [1, 3]}}, {"a": "x", "b": 1}]}`, "a",
			`[{"$numberInt":"1"}, {"$numberInt":"1"}] [{"$numberInt":"3"}, {"$numberInt":"3"}] ["x", "x"]`,
			`[{"$numberInt":"1"}, {"$numberInt":"1"}] [{"$numberInt":"3"}, {"$numberInt":"3"}] ["x", "x"]`},
		{"OrBranchUnbounded", `{"$or": [{"a": {"$gt": 5}}, {"b": 1}]}`, "a", "-", "-"},
		{"OrNested", `{"$or": [{"a": 1}, {"$or": [{"a": 2}, {"a": 3}]}]}`, "a",
			`[{"$numberInt":"1"}, {"$numberInt":"1"}] [{"$numberInt":"2"}, {"$numberInt":"2"}] [{"$numberInt":"3"}, {"$numberInt":"3"}]`,
			`[{"$numberInt":"1"}, {"$numberInt":"1"}] [{"$numberInt":"2"}, {"$numberInt":"2"}] [{"$numberInt":"3"}, {"$numberInt":"3"}]`},
		{"ConjunctBeforeOr", `{"a": 7, "$or": [{"a": 1}, {"a": 2}]}`, "a",
			`[{"$numberInt":"7"}, {"$numberInt":"7"}]`, `[{"$numberInt":"7"}, {"$numberInt":"7"}]`},
		{"DateLt", `{"d": {"$lt": {"$date": "2020-01-01T00:00:00Z"}}}`, "d",
			`[{"$date":{"$numberLong":"-9223372036854775808"}}, {"$date":{"$numberLong":"1577836800000"}})`,
			`[{"$date":{"$numberLong":"-9223372036854775808"}}, {"$date":{"$numberLong":"1577836800000"}})`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(doc(t, tc.filter), nil)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, ivs []Interval, ok bool, want string) {
				got := "-"
				if ok {
					got = ivString(ivs)
				}
				if got != want {
					t.Errorf("%s(%q) = %s, want %s", what, tc.path, got, want)
				}
			}
			ivs, ok := f.Intervals(tc.path)
			check("Intervals", ivs, ok, tc.want)
			ivs, ok = f.IntervalsNonMultikey(tc.path)
			check("IntervalsNonMultikey", ivs, ok, tc.wantNonMultikey)
		})
	}
}

// TestIntervalsSound checks that every value a filter matches lies in its intervals.
func TestIntervalsSound(t *testing.T) {
	values := []string{`1`, `5`, `5.5`, `{"$numberLong": "7"}`, `"a"`, `"m"`, `"z"`, `{}`, `{"b": 1}`,
		`true`, `false`, `null`, `{"$numberDouble": "NaN"}`, `{"$date": "2020-01-01T00:00:00Z"}`,
		`{"$oid": "5f0c1b2a3d4e5f6a7b8c9d0e"}`, `{"$minKey": 1}`, `{"$maxKey": 1}`}
	filters := []string{`{"a": {"$gt": 5}}`, `{"a": {"$gte": "m"}}`, `{"a": {"$lt": "m"}}`, `{"a": {"$lte": true}}`,
		`{"a": {"$in": [5, "a", true]}}`, `{"a": {"$gt": {}}}`, `{"a": {"$gte": 1, "$lte": 5}}`,
		`{"a": {"$lt": {"$date": "2021-01-01T00:00:00Z"}}}`, `{"a": {"$gt": {"$oid": "000000000000000000000000"}}}`,
		`{"$or": [{"a": {"$gt": 5}}, {"a": {"$lt": "m"}}, {"a": true}]}`, `{"$or": [{"a": {"$gte": 1, "$lte": 5}}, {"a": {"$in": ["z", {}]}}]}`}
	for _, fs := range filters {
		f, err := Compile(doc(t, fs), nil)
		if err != nil {
			t.Fatal(err)
		}
		ivs, ok := f.IntervalsNonMultikey("a")
		if !ok {
			t.Fatalf("%s: no intervals", fs)
		}
		for _, vs := range values {
			d := doc(t, `{"a": `+vs+`}`)
			if f.Match(d) && !inIntervals(d.Lookup("a"), ivs) {
				t.Errorf("%s matches %s outside %s", fs, vs, ivString(ivs))
			}
		}
	}
}

// inIntervals reports whether v lies in one of ivs.
func inIntervals(v bsoncore.Value, ivs []Interval) bool {
	for _, iv := range ivs {
		p := Interval{Lo: v, Hi: v, LoInclusive: true, HiInclusive: true}
		if len(intersect([]Interval{iv}, []Interval{p})) > 0 {
			return true
		}
	}
	return false
}

// TestRegexIntervalsSound checks that every string a regex with a literal prefix matches
// lies in the regex's intervals, and that no regex has bounds whose matches may start
// otherwise.
func TestRegexIntervalsSound(t *testing.T) {
	subjects := []string{"", "a", "ab", "abc", "abd", "abz", "ac", "b", "Ab", "ABC", "x\nab", "\nab", "a.c",
		"a+", "aab", "ab{", "abbb", "b|c", "été", "é", "a b", "ab#c", "a\xff", "a\xffb", "a\xff\xff"}
	patterns := []struct{ pattern, options string }{
		{"^abc", ""}, {"^ab", "s"}, {"^ab", "m"}, {`\Aab`, "m"}, {"^ab", "i"}, {"^ab?", ""}, {"^ab*c", ""},
		{"^ab{0}c", ""}, {"^ab+", ""}, {`^a\.c`, ""}, {`^a\d`, ""}, {`^\Qa.c\E`, ""}, {"^a|b", ""},
		{"^a b", "x"}, {"^ab#c", "x"}, {"^ét?", ""}, {"^é", ""}, {"^(ab)", ""}, {"^[ab]", ""}, {"^$", ""},
	}
	field := func(v bsoncore.Value) bsoncore.Document {
		return bsoncore.NewDocumentBuilder().AppendValue("a", v).Build()
	}
	for _, p := range patterns {
		fd := field(bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, p.pattern, p.options)})
		f, err := Compile(fd, nil)
		if err != nil {
			t.Fatalf("%s: %v", fd, err)
		}
		ivs, ok := f.Intervals("a")
		if !ok {
			continue
		}
		for _, s := range subjects {
			d := field(bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)})
			if f.Match(d) && !inIntervals(d.Lookup("a"), ivs) {
				t.Errorf("/%s/%s matches %q outside %s", p.pattern, p.options, s, ivString(ivs))
			}
		}
	}
	// All 0xFF: the strings from the prefix on.
	ivs := (&regexLeaf{pattern: "^\xff\xff"}).mustIntervals(t)
	if lo, ok := ivs[0].Lo.StringValueOK(); !ok || lo != "\xff\xff" || ivs[0].Hi.Type != bsoncore.TypeEmbeddedDocument {
		t.Errorf("intervals of /^\\xff\\xff/: %s", ivString(ivs))
	}
}

// mustIntervals returns r's intervals, failing the test when it has none.
func (r *regexLeaf) mustIntervals(t *testing.T) []Interval {
	t.Helper()
	ivs, ok := r.intervals()
	if !ok {
		t.Fatalf("/%s/%s: no intervals", r.pattern, r.options)
	}
	return ivs
}

// TestLiteralPrefix checks the text a regex's matches all start with.
func TestLiteralPrefix(t *testing.T) {
	for _, tc := range []struct{ pattern, options, want string }{
		{"^abc", "", "abc"},
		{`\Aabc`, "", "abc"},
		{"abc", "", ""},
		{"^abc", "i", ""},
		{"^abc", "m", ""},
		{`\Aabc`, "m", "abc"},
		{"^abc", "s", "abc"},
		{"^abc", "u", ""},
		{"^a b#c", "x", "ab"},
		{"^a b#c", "", "a b#c"},
		{"^ab?c", "", "a"},
		{"^ab*", "", "a"},
		{"^ab{2}", "", "a"},
		{"^ab+c", "", "ab"},
		{"^ab.c", "", "ab"},
		{"^ab$", "", "ab"},
		{"^ab(c)", "", "ab"},
		{"^ab[c]", "", "ab"},
		{`^a\.b`, "", "a.b"},
		{`^a\db`, "", "a"},
		{`^a\Q.*\Eb`, "", "a.*b"},
		{`^a\Q.*`, "", "a.*"},
		{"^ab|c", "", ""},
		{"^ét?", "", "é"},
		{"^é?", "", ""},
		{"^", "", ""},
		{`^ab\`, "", "ab"},
	} {
		if got := literalPrefix(tc.pattern, tc.options); got != tc.want {
			t.Errorf("literalPrefix(%q, %q) = %q, want %q", tc.pattern, tc.options, got, tc.want)
		}
	}
}

// TestBoundsExact checks which filters have exact bounds on a path.
func TestBoundsExact(t *testing.T) {
	for _, tc := range []struct {
		filter string
		paths  []string
		want   bool
	}{
		{`{"a": {"$gte": 1, "$lt": 5}}`, []string{"a"}, true},
		{`{"a": 5}`, []string{"a"}, true},
		{`{"a": {"$gt": "k"}}`, []string{"a"}, true},
		{`{"a": {"$lte": {"$date": "2026-01-01T00:00:00Z"}}}`, []string{"a"}, true},
		{`{"$and": [{"a": {"$gt": 1}}, {"a": {"$lt": 9}}]}`, []string{"a"}, true},
		{`{"a": {"$gte": 1}, "b": 2}`, []string{"a"}, false}, // another field
		{`{"a": {"$gte": 1}}`, []string{"b"}, false},         // another path
		{`{"a.b": {"$gte": 1}}`, []string{"a.b"}, false},     // dotted: arrays on the way
		{`{"a": {"$in": [1, 2]}}`, []string{"a"}, true},
		{`{"a": {"$in": [1, null]}}`, []string{"a"}, false}, // null matches missing
		{`{"a": {"$in": [1, {"$regularExpression": {"pattern": "x", "options": ""}}]}}`, []string{"a"}, false},
		{`{"a": {"$in": [1, [2]]}}`, []string{"a"}, false}, // an array
		{`{"a": {"$in": []}}`, []string{"a"}, false},
		{`{"a": {"$gte": 1}, "b": {"$in": [2, 3]}}`, []string{"a", "b"}, true},
		{`{"a": {"$gte": 1}, "b": 2, "c": 3}`, []string{"a", "b"}, false},
		{`{"a": {"$ne": 1}}`, []string{"a"}, false}, // negation
		{`{"a": null}`, []string{"a"}, false},       // null matches missing
		{`{"a": {"$gt": {"$numberDouble": "NaN"}}}`, []string{"a"}, false},
		{`{"a": {"$gte": {"x": 1}}}`, []string{"a"}, false},      // documents
		{`{"a": {"$gt": {"$minKey": 1}}}`, []string{"a"}, false}, // MinKey crosses types
		{`{"a": {"$exists": true}}`, []string{"a"}, false},
		{`{"a": {"$gt": 1}, "$nor": [{"a": 3}]}`, []string{"a"}, false},
		{`{"$or": [{"a": 1}, {"a": 2}]}`, []string{"a"}, false},
		{`{"a": {"$elemMatch": {"$gt": 1}}}`, []string{"a"}, false},
		{`{}`, []string{"a"}, false},
	} {
		f, err := Compile(doc(t, tc.filter), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.BoundsExact(tc.paths...); got != tc.want {
			t.Errorf("%s: BoundsExact(%q) = %v, want %v", tc.filter, tc.paths, got, tc.want)
		}
	}
}

// TestIsOr: a filter is an $or alone when its top-level conjunction is one $or (an $and of
// one $or too), with nothing beside it.
func TestIsOr(t *testing.T) {
	for filter, want := range map[string]bool{
		`{"$or": [{"a": 1}, {"b": {"$gt": 2}}]}`:             true,
		`{"$and": [{"$or": [{"a": 1}, {"b": 2}]}]}`:          true,
		`{"$or": [{"a": 1}, {"b": 2}], "c": 3}`:              false,
		`{"$or": [{"a": 1}], "$and": [{"$or": [{"b": 2}]}]}`: false,
		`{"a": 1}`:                       false,
		`{}`:                             false,
		`{"$nor": [{"a": 1}, {"b": 2}]}`: false,
		`{"$or": [{"a": 1}, {"b": 2}], "$comment": "only an or"}`: true,
	} {
		f, err := Compile(doc(t, filter), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.IsOr(); got != want {
			t.Errorf("%s: IsOr() = %v, want %v", filter, got, want)
		}
	}
}

// TestBoundsExactAgreesWithMatch: for every filter of one or two comparisons on a whose
// bounds are exact, a value of a (not an array: the index holds none) lies within the bounds
// IntervalsNonMultikey gives exactly when the filter matches the document, over values of
// every type that a comparison can meet, a missing field included.
func TestBoundsExactAgreesWithMatch(t *testing.T) {
	values := []string{`-5`, `0`, `{"$numberDouble": "-0.0"}`, `2`, `2.5`, `{"$numberLong": "9007199254740993"}`,
		`{"$numberDecimal": "2.50"}`, `{"$numberDecimal": "2.5000000000000000001"}`, `{"$numberDouble": "NaN"}`,
		`{"$numberDouble": "Infinity"}`, `{"$numberDouble": "-Infinity"}`, `""`, `"a"`, `"ab"`, `"b"`,
		`{"$date": "2026-01-01T00:00:00Z"}`, `{"$date": "2026-06-01T00:00:00Z"}`, `true`, `false`,
		`{"$oid": "650000000000000000000001"}`, `{"$oid": "650000000000000000000002"}`,
		`{"$timestamp": {"t": 5, "i": 1}}`, `null`, `{"x": 1}`, `{"$binary": {"base64": "", "subType": "00"}}`,
		`{"$minKey": 1}`, `{"$maxKey": 1}`}
	ops := []string{"$eq", "$gt", "$gte", "$lt", "$lte"}
	var filters []string
	for _, v := range values {
		filters = append(filters, fmt.Sprintf(`{"a": {"$in": [%s, 3, "az"]}}`, v))
	}
	for _, op := range ops {
		for _, v := range values {
			filters = append(filters, fmt.Sprintf(`{"a": {%q: %s}}`, op, v))
			for _, op2 := range ops[1:] {
				for _, v2 := range []string{`3`, `"az"`, `{"$date": "2026-03-01T00:00:00Z"}`} {
					filters = append(filters, fmt.Sprintf(`{"a": {%q: %s, %q: %s}}`, op, v, op2, v2))
				}
			}
		}
	}
	docs := []bsoncore.Document{doc(t, `{"b": 1}`)} // a missing
	for _, v := range values {
		docs = append(docs, doc(t, `{"a": `+v+`}`))
	}
	exact := 0
	for _, fs := range filters {
		f, err := Compile(doc(t, fs), nil)
		if err != nil || !f.BoundsExact("a") {
			continue
		}
		exact++
		iv, ok := f.IntervalsNonMultikey("a")
		if !ok {
			t.Fatalf("%s: exact, but no bounds", fs)
		}
		for _, d := range docs {
			v, err := d.LookupErr("a")
			in := err == nil && withinIntervals(v, iv)
			if m := f.Match(d); m != in {
				t.Errorf("%s on %s: matches %v, within the bounds %s %v", fs, d, m, ivString(iv), in)
			}
		}
	}
	if exact < 100 {
		t.Fatalf("only %d filters had exact bounds: the test tested little", exact)
	}
}

// withinIntervals reports whether v lies in one of ivs (bsonx.Compare, the index's order).
func withinIntervals(v bsoncore.Value, ivs []Interval) bool {
	for _, iv := range ivs {
		lo, hi := bsonx.Compare(v, iv.Lo), bsonx.Compare(v, iv.Hi)
		if (lo > 0 || lo == 0 && iv.LoInclusive) && (hi < 0 || hi == 0 && iv.HiInclusive) {
			return true
		}
	}
	return false
}
