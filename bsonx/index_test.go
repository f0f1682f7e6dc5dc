package bsonx

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// parsePattern parses "a:1,b.c:-1,d:hashed" into index fields.
func parsePattern(p string) []IndexField {
	var fs []IndexField
	for _, part := range strings.Split(p, ",") {
		path, dir, _ := strings.Cut(part, ":")
		fs = append(fs, IndexField{Path: path, Desc: dir == "-1", Hashed: dir == "hashed"})
	}
	return fs
}

// wantKeys encodes the expected keys, given as an Extended JSON array of arrays of values,
// sorted and deduplicated as AppendIndexKeys reports them.
func wantKeys(t *testing.T, fields []IndexField, keys string) [][]byte {
	t.Helper()
	var out [][]byte
	tuples := valueOf(t, keys).Array()
	vals, _ := tuples.Values()
	for _, tuple := range vals {
		comps, _ := tuple.Array().Values()
		if len(comps) != len(fields) {
			t.Fatalf("key %s has %d components for %d fields", tuple, len(comps), len(fields))
		}
		var k []byte
		for i, c := range comps {
			k = appendComponent(k, c, fields[i].Desc)
		}
		out = append(out, k)
	}
	slices.SortFunc(out, bytes.Compare)
	return slices.CompactFunc(out, bytes.Equal)
}

// indexKeyCases follow MongoDB's BtreeKeyGenerator (src/mongo/db/index/btree_key_generator.cpp);
// most come from its unit tests (btree_key_generator_test.cpp).
var indexKeyCases = []struct {
	name     string
	pattern  string
	doc      string
	keys     string // Extended JSON: [[component, …], …]
	multikey bool
	err      error
}{
	{"Scalar", "a:1", `{"a": 1}`, `[[1]]`, false, nil},
	{"Missing", "a:1", `{"b": 1}`, `[[null]]`, false, nil},
	{"Compound", "x:1,y:1", `{"x": "a", "y": "b"}`, `[["a", "b"]]`, false, nil},
	{"CompoundMissing", "x:1,y:1", `{"x": "a"}`, `[["a", null]]`, false, nil},
	{"Descending", "x:1,y:-1", `{"x": 1, "y": [1, 2]}`, `[[1, 1], [1, 2]]`, true, nil},
	{"Array", "a:1", `{"a": [1, 2]}`, `[[1], [2]]`, true, nil},
	{"ArrayDuplicates", "a:1", `{"a": [1, 2, 1, 1.0, {"$numberLong": "2"}]}`, `[[1], [2]]`, true, nil},
	{"EmptyArray", "a:1", `{"a": []}`, `[[{"$undefined": true}]]`, true, nil},
	{"NestedArray", "a:1", `{"a": [[2]]}`, `[[[2]]]`, true, nil},
	{"Null", "a:1", `{"a": null}`, `[[null]]`, false, nil},
	{"ArraySubobject", "a.b:1,d:1", `{"a": [{"b": 1, "c": 4}, {"b": 2}, {"b": 3}], "d": 99}`, `[[1, 99], [2, 99], [3, 99]]`, true, nil},
	{"ArraySubobjectMissing", "a.b:1", `{"a": [{"foo": 41}, {"b": 1}, {"b": 2}]}`, `[[null], [1], [2]]`, true, nil},
	{"ScalarsUnderPath", "a.b:1", `{"a": [1, 2]}`, `[[null]]`, true, nil},
	{"AlternateMissing", "a.b:1,a.c:1", `{"a": [{"b": 1}, {"c": 2}]}`, `[[null, 2], [1, null]]`, true, nil},
	{"MultiComplex", "a.b:1", `{"a": [{"b": 1}, {"b": [1, 2, 3]}]}`, `[[1], [2], [3]]`, true, nil},
	{"DoubleArray", "a:1,a:1", `{"a": [1, 2]}`, `[[1, 1], [2, 2]]`, true, nil},
	{"DoubleEmptyArray", "a:1,a:1", `{"a": []}`, `[[{"$undefined": true}, {"$undefined": true}]]`, true, nil},
	{"MultiEmptyArray", "a:1,b:1", `{"a": 1, "b": []}`, `[[1, {"$undefined": true}]]`, true, nil},
	{"NestedEmptyArray", "a.b:1", `{"a": []}`, `[[null]]`, true, nil},
	{"UnevenNestedEmptyArray", "a:1,a.b:1", `{"a": []}`, `[[{"$undefined": true}, null]]`, true, nil},
	{"UnevenNestedSubobject", "a:1,a.b:1", `{"a": [{"b": 1}]}`, `[[{"b": 1}, 1]]`, true, nil},
	{"UnevenNestedEmptyInner", "a:1,a.b:1", `{"a": [{"b": []}]}`, `[[{"b": []}, {"$undefined": true}]]`, true, nil},
	{"UnevenNestedArrays", "a:1,a.b:1", `{"a": [1, {"b": [2, 3, 4]}]}`,
		`[[1, null], [{"b": [2, 3, 4]}, 2], [{"b": [2, 3, 4]}, 3], [{"b": [2, 3, 4]}, 4]]`, true, nil},
	{"MultipleArraysNotParallel", "a.b.c:1", `{"a": [1, 2, {"b": {"c": [3, 4]}}]}`, `[[null], [3], [4]]`, true, nil},
	{"MultipleArraysNotParallelCompound", "a.b.c:1,a.b.d:1", `{"a": [1, 2, {"b": {"c": [3, 4], "d": 5}}]}`,
		`[[null, null], [3, 5], [4, 5]]`, true, nil},
	{"ComplexNestedArrays", "a.b.c.d:1,a.g:1,a.b.f:1,a.b.c:1,a.b.e:1",
		`{"a": [1, {"b": [2, {"c": [3, {"d": 1}], "e": 4}, 5, {"f": 6}], "g": 7}]}`,
		`[[null, null, null, null, null], [null, 7, null, null, null], [null, 7, null, 3, 4], [null, 7, 6, null, null], [1, 7, null, {"d": 1}, 4]]`,
		true, nil},

	// Positional paths.
	{"PositionalScalar", "a.0:1", `{"a": [1]}`, `[[1]]`, false, nil},
	{"PositionalNestedArray", "a.0:1", `{"a": [[1]]}`, `[[[1]]]`, false, nil},
	{"PositionalNestedEmpty", "a.0:1", `{"a": [[]]}`, `[[{"$undefined": true}]]`, false, nil},
	{"PositionalOnDocument", "a.0:1", `{"a": {"0": 1}}`, `[[1]]`, false, nil},
	{"PositionalAmbiguous", "a.0:1", `{"a": [{"0": 1}]}`, ``, false, ErrAmbiguousArrayField},
	{"PositionalAmbiguousLater", "a.0:1", `{"a": [1, {"0": 2}]}`, ``, false, ErrAmbiguousArrayField},
	{"DoublePositional", "a.0.0:1", `{"a": [[1]]}`, `[[1]]`, false, nil},
	{"DoublePositionalEmpty", "a.0.0:1", `{"a": [[]]}`, `[[null]]`, false, nil},
	{"DoublePositionalOuterEmpty", "a.0.0:1", `{"a": []}`, `[[null]]`, true, nil},
	{"DoublePositionalDeepEmpty", "a.0.0:1", `{"a": [[[]]]}`, `[[{"$undefined": true}]]`, false, nil},
	{"PositionalThenField", "a.0.b:1", `{"a": [{"b": 1}]}`, `[[1]]`, false, nil},
	{"PositionalThenFieldArray", "a.0.b:1", `{"a": [{"b": [1]}]}`, `[[1]]`, true, nil},
	{"PositionalThenFieldNested", "a.0.b:1", `{"a": [{"b": [[1]]}]}`, `[[[1]]]`, true, nil},
	{"PositionalIn2DArray", "a.0.b:1", `{"a": [[{"b": 1}]]}`, `[[1]]`, true, nil},
	{"PositionalIn2DArrayEmpty", "a.0.b:1", `{"a": [[{"b": []}]]}`, `[[{"$undefined": true}]]`, true, nil},
	{"PositionalArrayInObjectInArray", "a.0.b.0:1", `{"a": [{"b": [1]}]}`, `[[1]]`, false, nil},
	{"PositionalMissingElement", "a.2:1", `{"a": [{"2": 5}]}`, `[[5]]`, true, nil},
	{"PositionalMissingNested", "a.2:1", `{"a": [[1, 2, 5]]}`, `[[null]]`, true, nil},
	{"PositionalWholeNested", "a.2:1", `{"a": [[1, 2, 5], [3, 4, 6], [0, 1, 2]]}`, `[[[0, 1, 2]]]`, false, nil},
	{"PositionalObjectFields", "a.2:1", `{"a": [{"0": 1, "1": 2, "2": 5}]}`, `[[5]]`, true, nil},
	{"PositionalUnderField", "a.b.2:1", `{"a": [{"b": [[1, 2, 5]]}]}`, `[[null]]`, true, nil},
	{"PositionalMixed", "a.2:1", `{"a": [[1, 2, 5], {"2": 6}]}`, `[[null], [6]]`, true, nil},
	{"PositionalGetsEach", "a.0.0.b:1", `{"a": [[{"b": [1, 2, 3]}]]}`, `[[1], [2], [3]]`, true, nil},
	{"PositionalEachIn3D", "a.0.0.b:1", `{"a": [[[{"b": 1}, {"b": 2}, {"b": 3}]]]}`, `[[1], [2], [3]]`, true, nil},
	{"NullNestedArray", "a.b:1", `{"a": [[1, 2, 5]]}`, `[[null]]`, true, nil},

	// Parallel arrays.
	{"ParallelArrays", "a:1,b:1", `{"a": [1, 2], "b": [3, 4]}`, ``, false, &ParallelArraysError{First: "b", Second: "a"}},
	{"ParallelArraysComplex", "a.b:1,a.c:1", `{"a": [{"b": [1], "c": [2]}]}`, ``, false, ErrParallelArrays},
	{"ParallelInNestedObjects", "a.a:1,b.a:1", `{"a": {"a": [1]}, "b": {"a": [1]}}`, ``, false, &ParallelArraysError{First: "a", Second: "a"}},
	{"ParallelUneven", "b.a:1,a:1", `{"b": {"a": [1]}, "a": [1, 2]}`, ``, false, ErrParallelArrays},
	{"ParallelEmptyArrays", "a:1,b:1", `{"a": [], "b": []}`, ``, false, ErrParallelArrays},
	{"ParallelOneEmpty", "a:1,b:1", `{"a": [], "b": [1, 2, 3]}`, ``, false, ErrParallelArrays},
	{"ParallelOneEmptyNested", "a.b.c:1,a.b.d:1", `{"a": [{"b": [{"c": [1, 2, 3], "d": []}]}]}`, ``, false, ErrParallelArrays},
	{"ParallelPositional", "a:1,b.0:1", `{"a": [1], "b": [2]}`, ``, false, ErrParallelArrays},

	// Hashed indexes: one key, no arrays anywhere.
	{"HashedMissing", "a:hashed", `{}`, ``, false, nil},
	{"HashedArray", "a:hashed", `{"a": [1]}`, ``, false, &HashedArrayError{Path: "a"}},
	{"HashedArrayMidPath", "a.b:hashed", `{"a": [{"b": 1}]}`, ``, false, &HashedArrayError{Path: "a"}},
	{"HashedArrayDeep", "x:1,a.b.c:hashed", `{"x": 1, "a": {"b": [1]}}`, ``, false, &HashedArrayError{Path: "a.b"}},
	{"HashedCompoundArrayInOther", "x:1,a:hashed", `{"x": [1], "a": 1}`, ``, false, &HashedArrayError{Path: "x"}},
}

// TestAppendIndexKeys checks the keys, multikey flag and errors of indexKeyCases.
func TestAppendIndexKeys(t *testing.T) {
	for _, tc := range indexKeyCases {
		t.Run(tc.name, func(t *testing.T) {
			fields := parsePattern(tc.pattern)
			var got [][]byte
			multikey, err := AppendIndexKeys(ej(t, tc.doc), fields, func(k []byte) error {
				got = append(got, bytes.Clone(k))
				return nil
			})
			if tc.err != nil {
				if !errors.Is(err, tc.err) && !sameError(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.keys == "" {
				return // hashed cases check their keys in TestAppendIndexKeysHashed
			}
			want := wantKeys(t, fields, tc.keys)
			if len(got) != len(want) {
				t.Fatalf("got %d keys %x, want %d %x", len(got), got, len(want), want)
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("key %d = %x, want %x", i, got[i], want[i])
				}
			}
			if multikey != tc.multikey {
				t.Errorf("multikey = %v, want %v", multikey, tc.multikey)
			}
		})
	}
}

// sameError reports whether err is a typed error equal to want.
func sameError(err, want error) bool {
	var p *ParallelArraysError
	if errors.As(want, &p) {
		var g *ParallelArraysError
		return errors.As(err, &g) && *g == *p && err.Error() == want.Error()
	}
	var h *HashedArrayError
	if errors.As(want, &h) {
		var g *HashedArrayError
		return errors.As(err, &g) && *g == *h
	}
	return false
}

// TestAppendIndexKeysHashed checks the single key of indexes with a hashed component.
func TestAppendIndexKeysHashed(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		doc     string
		want    []bsoncore.Value // component values; hashed ones are hashed by the test
	}{
		{"a:hashed", `{"a": 5}`, []bsoncore.Value{i32(5)}},
		{"a:hashed", `{"a": 5.0}`, []bsoncore.Value{i64(5)}},
		{"a:hashed", `{}`, []bsoncore.Value{null()}},
		{"a.b:hashed", `{"a": {"b": "x"}}`, []bsoncore.Value{str("x")}},
		{"x:1,a:hashed,y:-1", `{"x": 1, "a": {"c": 1}, "y": "z"}`, []bsoncore.Value{i32(1), obj("c", i32(1)), str("z")}},
	} {
		fields := parsePattern(tc.pattern)
		var want []byte
		for i, f := range fields {
			if f.Hashed {
				want = appendComponent(want, i64(int64(Hash(tc.want[i]))), f.Desc)
			} else {
				want = appendComponent(want, tc.want[i], f.Desc)
			}
		}
		n := 0
		multikey, err := AppendIndexKeys(ej(t, tc.doc), fields, func(k []byte) error {
			n++
			if !bytes.Equal(k, want) {
				t.Errorf("%s on %s: key %x, want %x", tc.pattern, tc.doc, k, want)
			}
			return nil
		})
		if err != nil || multikey || n != 1 {
			t.Errorf("%s on %s: err %v, multikey %v, %d keys", tc.pattern, tc.doc, err, multikey, n)
		}
	}
}

// TestAppendIndexKeysStops checks that an error from the callback stops generation.
func TestAppendIndexKeysStops(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	_, err := AppendIndexKeys(ej(t, `{"a": [1, 2, 3]}`), parsePattern("a:1"), func([]byte) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("err = %v after %d calls, want the callback's error after 1", err, n)
	}
}

// TestErrorMessages checks the typed errors against MongoDB's messages.
func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&ParallelArraysError{First: "b", Second: "a"}, "cannot index parallel arrays [b] [a]"},
		{&HashedArrayError{Path: "a.b"}, "Error: hashed indexes do not currently support array values. Found array at path: a.b"},
		{&AmbiguousFieldError{Field: "0"}, "Ambiguous field name found in array (do not use numeric field names in embedded elements in an array), field: '0'"},
	} {
		if tc.err.Error() != tc.want {
			t.Errorf("got %q, want %q", tc.err.Error(), tc.want)
		}
	}
}

// TestAppendIndexKeysArrays: AppendIndexKeysArrays generates AppendIndexKeys' keys, and
// reports no array only for documents where no field's path meets one (the walk the write
// path's multikey check, catalog.arrayOnPath, does), so that skipping that walk loses no
// multikey path.
func TestAppendIndexKeysArrays(t *testing.T) {
	cases := []struct{ pattern, doc string }{
		{"a:1", `{"a": 1}`}, {"a.b:1", `{"a": {"b": 2}}`}, {"a.b.c:1,d:1", `{"a": {"b": 5}, "d": "x"}`},
		{"a:1", `{"a": [1, 2]}`}, {"a:1", `{"a": []}`}, {"a.b:1", `{"a": [{"b": 1}]}`},
		{"a.b:1", `{"a": {"b": [1]}}`}, {"a.0:1", `{"a": [5, 6]}`}, {"a.b.c:1", `{"a": [1, 2]}`},
		{"x:1,a.b:1", `{"x": 1, "a": {"c": [1]}}`}, {"x:1,y:1", `{"x": [[1]], "y": 2}`},
	}
	for _, tc := range indexKeyCases {
		if tc.err == nil {
			cases = append(cases, struct{ pattern, doc string }{tc.pattern, tc.doc})
		}
	}
	sawNone := false
	for _, tc := range cases {
		fields, doc := parsePattern(tc.pattern), ej(t, tc.doc)
		var want, got [][]byte
		wantMK, err := AppendIndexKeys(doc, fields, func(k []byte) error { want = append(want, bytes.Clone(k)); return nil })
		gotMK, arrays, gotErr := AppendIndexKeysArrays(doc, fields, func(k []byte) error { got = append(got, bytes.Clone(k)); return nil })
		if (err == nil) != (gotErr == nil) || gotMK != wantMK || !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("%s on %s: keys %x multikey %v err %v, want %x %v %v", tc.pattern, tc.doc, got, gotMK, gotErr, want, wantMK, err)
		}
		if err != nil || arrays {
			continue
		}
		sawNone = true
		for _, f := range fields {
			WalkPath(doc, f.Path, func(m PathMatch) bool {
				if m.InLeafArray || m.ArrayIndex >= 0 || m.Value.Type == bsoncore.TypeArray {
					t.Errorf("%s on %s: no array reported, but %s meets one", tc.pattern, tc.doc, f.Path)
					return false
				}
				return true
			})
		}
	}
	if !sawNone {
		t.Fatal("no case without arrays")
	}
}
