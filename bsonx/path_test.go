package bsonx

import (
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// describe renders a PathMatch compactly: the value as relaxed Extended JSON or "missing", then
// "@i" for an array index and "~" for an element of a leaf array.
func describe(m PathMatch) string {
	var s string
	if m.Missing {
		s = "missing"
	} else {
		s = bson.RawValue{Type: bson.Type(m.Value.Type), Value: m.Value.Data}.String()
	}
	if m.ArrayIndex >= 0 {
		s += "@" + strconv.Itoa(m.ArrayIndex)
	}
	if m.InLeafArray {
		s += "~"
	}
	return s
}

// walkPathCases follow MongoDB's BSONElementIterator (src/mongo/db/matcher/path.cpp) and
// getFieldDottedOrArray (path_internal.cpp), with the default traverse behaviours.
var walkPathCases = []struct {
	name string
	doc  string
	path string
	want []string
}{
	{"Scalar", `{"a": 1}`, "a", []string{`{"$numberInt":"1"}`}},
	{"MissingField", `{"b": 1}`, "a", []string{"missing"}},
	{"Nested", `{"a": {"b": "x"}}`, "a.b", []string{`"x"`}},
	{"ScalarMidPath", `{"a": 5}`, "a.b", []string{"missing"}},
	{"NullMidPath", `{"a": null}`, "a.b", []string{"missing"}},
	{"EmptySubdocument", `{"a": {}}`, "a.b", []string{"missing"}},
	{"SubdocumentLeaf", `{"a": {"b": 1}}`, "a", []string{`{"b": {"$numberInt":"1"}}`}},
	{"ArrayOfDocs", `{"a": [{"b": 1}, {"c": 2}]}`, "a.b", []string{`{"$numberInt":"1"}@0`, "missing@1"}},
	{"LeafArray", `{"a": [[1, 2], 3]}`, "a", []string{
		`[{"$numberInt":"1"},{"$numberInt":"2"}]@0~`, `{"$numberInt":"3"}@1~`,
		`[[{"$numberInt":"1"},{"$numberInt":"2"}],{"$numberInt":"3"}]`,
	}},
	{"EmptyLeafArray", `{"a": []}`, "a", []string{`[]`}},
	{"NumericFieldOfDocument", `{"a": {"0": 5}}`, "a.0", []string{`{"$numberInt":"5"}`}},
	{"ScalarsInArrayMidPath", `{"a": [1, 2]}`, "a.b", nil},
	{"EmptyArrayMidPath", `{"a": []}`, "a.b", nil},
	{"ArrayIndex", `{"a": [5, 6]}`, "a.1", []string{`{"$numberInt":"6"}`}},
	{"ArrayIndexOutOfRange", `{"a": [5, 6]}`, "a.2", nil},
	{"LeafArrayInArray", `{"a": [{"b": [1, 2]}, {"b": 3}]}`, "a.b", []string{
		`{"$numberInt":"1"}@0~`, `{"$numberInt":"2"}@0~`, `[{"$numberInt":"1"},{"$numberInt":"2"}]@0`,
		`{"$numberInt":"3"}@1`,
	}},
	{"IndexAndFieldName", `{"a": [{"0": 7}, 8]}`, "a.0", []string{`{"$numberInt":"7"}@0`, `{"0": {"$numberInt":"7"}}`}},
	{"IndexOfNestedArray", `{"a": [[1, 2]]}`, "a.0", []string{`[{"$numberInt":"1"},{"$numberInt":"2"}]`}},
	{"IndexIntoNestedArray", `{"a": [[1, 2]]}`, "a.0.1", []string{`{"$numberInt":"2"}`}},
	{"IndexThenField", `{"a": [{"b": 1}]}`, "a.0.b", []string{"missing@0", `{"$numberInt":"1"}`}},
	{"IndexThenLeafArray", `{"a": [{"b": [1]}]}`, "a.0.b", []string{
		"missing@0", `{"$numberInt":"1"}@0~`, `[{"$numberInt":"1"}]`,
	}},
	{"ArrayOfArraysMidPath", `{"a": [[{"b": 1}]]}`, "a.b", nil},
	{"MixedArray", `{"a": [1, {"b": 2}]}`, "a.b", []string{`{"$numberInt":"2"}@1`}},
	{"DeepFanOut", `{"a": [{"b": {"c": 1}}, {"b": {"c": 2}}]}`, "a.b.c", []string{`{"$numberInt":"1"}@0`, `{"$numberInt":"2"}@1`}},
	{"ArrayUnderDocument", `{"a": {"b": [{"c": 1}, {"c": [2]}]}}`, "a.b.c", []string{
		`{"$numberInt":"1"}@0`, `{"$numberInt":"2"}@1~`, `[{"$numberInt":"2"}]@1`,
	}},
	{"OutermostIndexWins", `{"a": [{"b": [{"c": 1}, {"c": 2}]}, {"b": [{"c": 3}]}]}`, "a.b.c", []string{
		`{"$numberInt":"1"}@0`, `{"$numberInt":"2"}@0`, `{"$numberInt":"3"}@1`,
	}},
	{"FieldWithSpace", `{"department name": "x"}`, "department name", []string{`"x"`}},
}

// TestWalkPath checks walkPathCases, and that returning false stops the walk.
func TestWalkPath(t *testing.T) {
	for _, tc := range walkPathCases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			WalkPath(ej(t, tc.doc), tc.path, func(m PathMatch) bool {
				got = append(got, describe(m))
				return true
			})
			if strings.Join(got, " | ") != strings.Join(tc.want, " | ") {
				t.Errorf("WalkPath(%s, %q)\n got %v\nwant %v", tc.doc, tc.path, got, tc.want)
			}
			// Stopping after the first match yields exactly one.
			n := 0
			WalkPath(ej(t, tc.doc), tc.path, func(PathMatch) bool { n++; return false })
			if want := min(1, len(tc.want)); n != want {
				t.Errorf("after stopping, fn ran %d times, want %d", n, want)
			}
		})
	}
}

// TestLookup checks plain lookups: indexes into arrays, no fan-out.
func TestLookup(t *testing.T) {
	doc := ej(t, `{"a": {"b": [10, {"c": "x"}], "0": "zero"}, "s": "top", "n": null}`)
	for _, tc := range []struct {
		path string
		want string // "" for not found
	}{
		{"s", `"top"`},
		{"n", `null`},
		{"a.b.0", `{"$numberInt":"10"}`},
		{"a.b.1.c", `"x"`},
		{"a.0", `"zero"`},
		{"a.b.c", ""}, // no fan-out over arrays
		{"a.b.2", ""},
		{"a.b.01", ""},
		{"s.x", ""},
		{"missing", ""},
		{"a.b.0.x", ""},
	} {
		v, ok := Lookup(doc, tc.path)
		got := ""
		if ok {
			got = bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}.String()
		}
		if got != tc.want {
			t.Errorf("Lookup(%q) = %s, want %s", tc.path, got, tc.want)
		}
	}
}

// TestLookupOrArray checks the shard-key lookup: through documents only, the first array on
// the path returned whether the path ends at it or goes on past it, never indexed into.
func TestLookupOrArray(t *testing.T) {
	doc := ej(t, `{"a": {"b": [10, {"c": "x"}], "0": "zero", "d": {"e": 1, "f": [[1]]}},
		"s": "top", "n": null, "e": [], "p": [{"q": 1}]}`)
	for _, tc := range []struct {
		path string
		want string // "" for not found
	}{
		{"s", `"top"`},
		{"n", `null`},
		{"a.0", `"zero"`},
		{"a.d.e", `{"$numberInt":"1"}`},
		{"a.d", `{"e": {"$numberInt":"1"},"f": [[{"$numberInt":"1"}]]}`}, // arrays inside the value are its own
		{"a.b", `[{"$numberInt":"10"},{"c": "x"}]`},
		{"a.b.c", `[{"$numberInt":"10"},{"c": "x"}]`}, // the array on the path, not a fan-out
		{"a.b.0", `[{"$numberInt":"10"},{"c": "x"}]`}, // not an index into it
		{"a.b.1.c", `[{"$numberInt":"10"},{"c": "x"}]`},
		{"a.d.f.g", `[[{"$numberInt":"1"}]]`},
		{"e.x", `[]`},
		{"p.q", `[{"q": {"$numberInt":"1"}}]`},
		{"s.x", ""},
		{"n.x", ""},
		{"a.x", ""},
		{"a.d.e.f", ""},
		{"missing", ""},
		{"missing.a", ""},
	} {
		v, ok := LookupOrArray(doc, tc.path)
		got := ""
		if ok {
			got = bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}.String()
		}
		if got != tc.want {
			t.Errorf("LookupOrArray(%q) = %s, want %s", tc.path, got, tc.want)
		}
	}
	if v, ok := LookupOrArray(nil, "a"); ok {
		t.Errorf("LookupOrArray(nil) = %v", v)
	}
}

// TestArrayKey checks ArrayKey inside and beyond its table.
func TestArrayKey(t *testing.T) {
	for _, i := range []int{0, 1, 9, 10, 999, 1000, 123456} {
		if got := ArrayKey(i); got != strconv.Itoa(i) {
			t.Errorf("ArrayKey(%d) = %q", i, got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = ArrayKey(537) }); n != 0 && !raceEnabled {
		t.Errorf("ArrayKey allocates %v times", n)
	}
}

// valueOf returns the first value of a one-field Extended JSON document.
func valueOf(t testing.TB, s string) bsoncore.Value {
	t.Helper()
	return ej(t, `{"v": `+s+`}`).Index(0).Value()
}

// TestTopField checks the top-level field of dotted paths.
func TestTopField(t *testing.T) {
	for path, want := range map[string]string{"a": "a", "a.b": "a", "a.b.c": "a", "": "", ".a": "", "a.": "a"} {
		if got := TopField(path); got != want {
			t.Errorf("TopField(%q) = %q, want %q", path, got, want)
		}
	}
}
