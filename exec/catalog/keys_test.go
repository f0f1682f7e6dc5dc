package catalog_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// compileIndex compiles an index on key (Extended JSON) with spec options opts ("" for
// none) as the catalog stores it.
func compileIndex(t *testing.T, key, opts string) *catalog.Index {
	t.Helper()
	spec := `{"key": ` + key + `, "name": "i"`
	if opts != "" {
		spec += ", " + opts
	}
	xi, err := catalog.CompileIndex(&store.Index{ID: 2, Name: "i", Key: ext(t, key), Spec: ext(t, spec+"}"), Ready: true})
	if err != nil {
		t.Fatal(err)
	}
	return xi
}

// keyStrings returns the keys doc has in xi, in key order, each decoded as "[v1, v2]".
func keyStrings(t *testing.T, xi *catalog.Index, doc string) ([]string, error) {
	t.Helper()
	var raw [][]byte
	err := xi.Keys(ext(t, doc), func(k []byte) error {
		raw = append(raw, bytes.Clone(k))
		return nil
	})
	slices.SortFunc(raw, bytes.Compare)
	var out []string
	for _, k := range raw {
		var parts []string
		for _, f := range xi.Fields {
			dec := bsonx.DecodeKey
			if f.Desc {
				dec = bsonx.DecodeKeyDesc
			}
			v, rem, ok := dec(k)
			if !ok {
				t.Fatalf("key %x does not decode", k)
			}
			parts = append(parts, bsonx.ShellString(v))
			k = rem
		}
		if len(k) != 0 {
			t.Fatalf("key has %d bytes past its fields", len(k))
		}
		out = append(out, "["+strings.Join(parts, ", ")+"]")
	}
	return out, err
}

// TestIndexKeys checks the keys documents have in ordered indexes: compound, descending,
// multikey (one per distinct element), missing fields as null, empty arrays as undefined,
// sparse and partial indexes skipping documents, collated strings, and the refusals.
func TestIndexKeys(t *testing.T) {
	for _, tc := range []struct {
		name, key, opts, doc string
		want                 []string
		code                 mongoerr.Code
		codeName, msg        string
	}{
		{"Scalar", `{"a": 1}`, "", `{"_id": 1, "a": 5}`, []string{"[5]"}, 0, "", ""},
		{"Missing", `{"a": 1}`, "", `{"_id": 1}`, []string{"[null]"}, 0, "", ""},
		{"Null", `{"a": 1}`, "", `{"a": null}`, []string{"[null]"}, 0, "", ""},
		{"Dotted", `{"a.b": 1}`, "", `{"a": {"b": "x"}}`, []string{`["x"]`}, 0, "", ""},
		{"Descending", `{"a": -1}`, "", `{"a": 5}`, []string{"[5]"}, 0, "", ""},
		{"Compound", `{"a": 1, "b": -1}`, "", `{"b": "x", "a": 2}`, []string{`[2, "x"]`}, 0, "", ""},
		{"MultikeyOnePerElement", `{"a": 1}`, "", `{"a": [3, 1, 2]}`, []string{"[1]", "[2]", "[3]"}, 0, "", ""},
		{"MultikeyDuplicatesOnce", `{"a": 1}`, "", `{"a": [1, 1, 2, 1]}`, []string{"[1]", "[2]"}, 0, "", ""},
		{"MultikeyEmptyArray", `{"a": 1}`, "", `{"a": []}`, []string{"[undefined]"}, 0, "", ""},
		{"MultikeyThroughArray", `{"a.b": 1}`, "", `{"a": [{"b": 1}, {"b": 2}, {"c": 3}]}`, []string{"[null]", "[1]", "[2]"}, 0, "", ""},
		{"MultikeyCompound", `{"a": 1, "b": 1}`, "", `{"a": [1, 2], "b": "x"}`, []string{`[1, "x"]`, `[2, "x"]`}, 0, "", ""},
		{"ParallelArrays", `{"a": 1, "b": 1}`, "", `{"a": [1], "b": [2]}`, nil,
			mongoerr.CannotIndexParallelArrays, "CannotIndexParallelArrays", ""}, // message: TestParallelArraysMessage
		{"SparseSkipsMissing", `{"a": 1}`, `"sparse": true`, `{"b": 1}`, nil, 0, "", ""},
		{"SparseKeepsNull", `{"a": 1}`, `"sparse": true`, `{"a": null}`, []string{"[null]"}, 0, "", ""},
		{"SparseCompoundAnyField", `{"a": 1, "b": 1}`, `"sparse": true`, `{"b": 1}`, []string{"[null, 1]"}, 0, "", ""},
		{"PartialSkips", `{"a": 1}`, `"partialFilterExpression": {"a": {"$gt": 5}}`, `{"a": 3}`, nil, 0, "", ""},
		{"PartialKeeps", `{"a": 1}`, `"partialFilterExpression": {"a": {"$gt": 5}}`, `{"a": 7}`, []string{"[7]"}, 0, "", ""},
		{"CollatedStrings", `{"a": 1}`, `"collation": {"locale": "en", "strength": 2}`, `{"a": ["A", "a"]}`, nil, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xi := compileIndex(t, tc.key, tc.opts)
			got, err := keyStrings(t, xi, tc.doc)
			wantCode(t, err, tc.code, tc.codeName, tc.msg)
			if tc.name == "CollatedStrings" { // one collation key for "A" and "a", not a string
				if len(got) != 1 || strings.Contains(got[0], `"a"`) || strings.Contains(got[0], `"A"`) {
					t.Errorf("keys %v, want one collation key", got)
				}
				return
			}
			if tc.code == 0 && !slices.Equal(got, tc.want) {
				t.Errorf("keys %v, want %v", got, tc.want)
			}
			if applies := xi.Applies(ext(t, tc.doc)); applies != (len(tc.want) > 0 || tc.code != 0) {
				t.Errorf("Applies = %v with keys %v", applies, tc.want)
			}
		})
	}
}

// TestParallelArraysMessage checks the words of CannotIndexParallelArrays: MongoDB names the
// array found second, then the one found first ("cannot index parallel arrays [b] [a]" for
// {a: 1, b: 1}), as bsonx.ParallelArraysError's own message does; the order follows the key
// pattern, not the document, and a name is the array's own field name, not its path.
func TestParallelArraysMessage(t *testing.T) {
	for _, tc := range []struct{ key, doc, msg string }{
		{`{"a": 1, "b": 1}`, `{"a": [1], "b": [2]}`, "cannot index parallel arrays [b] [a]"},
		{`{"b": 1, "a": 1}`, `{"a": [1], "b": [2]}`, "cannot index parallel arrays [a] [b]"},
		{`{"x.a": 1, "x.b": 1}`, `{"x": {"a": [1], "b": [2]}}`, "cannot index parallel arrays [b] [a]"},
		{`{"a.x": 1, "b.y": 1}`, `{"a": [{"x": 1}], "b": [{"y": 2}]}`, "cannot index parallel arrays [b] [a]"},
	} {
		xi := compileIndex(t, tc.key, "")
		_, err := keyStrings(t, xi, tc.doc)
		wantCode(t, err, mongoerr.CannotIndexParallelArrays, "CannotIndexParallelArrays", tc.msg)
	}
}

// TestHashedIndexKeys checks a hashed index: one key, the hash of the value, equal for
// equal numbers of every type, and arrays refused with MongoDB's error 16766.
func TestHashedIndexKeys(t *testing.T) {
	xi := compileIndex(t, `{"a": 1, "h": "hashed"}`, "")
	if !xi.Hashed || !xi.Fields[1].Hashed {
		t.Fatal("the index is not hashed")
	}
	h1 := fmt.Sprintf(`["x", %d]`, int64(bsonx.Hash(bsonx.Int32Value(1))))
	for _, in := range []string{`1`, `1.0`, `{"$numberLong": "1"}`, `{"$numberDecimal": "1.0"}`} {
		got, err := keyStrings(t, xi, `{"a": "x", "h": `+in+`}`)
		if err != nil || len(got) != 1 || got[0] != h1 {
			t.Errorf("h: %s: keys %v (%v), want [%s]", in, got, err, h1)
		}
	}
	got, _ := keyStrings(t, xi, `{"a": "x", "h": 2}`)
	if len(got) != 1 || got[0] == h1 {
		t.Errorf("h: 2 has keys %v, the same as h: 1", got)
	}
	hnull := fmt.Sprintf(`["x", %d]`, int64(bsonx.Hash(bsoncore.Value{Type: bsoncore.TypeNull})))
	if got, _ := keyStrings(t, xi, `{"a": "x"}`); len(got) != 1 || got[0] != hnull {
		t.Errorf("h missing: keys %v, want [%s] (the hash of null)", got, hnull)
	}
	_, err := keyStrings(t, xi, `{"a": "x", "h": [1]}`)
	wantCode(t, err, mongoerr.Location16766, "Location16766",
		"Error: hashed indexes do not currently support array values. Found array at path: h")
	_, err = keyStrings(t, xi, `{"a": [1], "h": 1}`)
	wantCode(t, err, mongoerr.Location16766, "Location16766",
		"Error: hashed indexes do not currently support array values. Found array at path: a")
}

// TestMultikeyFlags checks NewMultikeyPaths, IsMultikey and OneEntryPerDoc: the fields a
// document holds arrays on and the index is not yet multikey on.
func TestMultikeyFlags(t *testing.T) {
	x := &store.Index{ID: 2, Name: "i", Key: ext(t, `{"a": 1, "b.c": 1}`), Ready: true, MultikeyPaths: []string{"a"}}
	xi, err := catalog.CompileIndex(x)
	if err != nil {
		t.Fatal(err)
	}
	if !xi.IsMultikey(0) || xi.IsMultikey(1) || xi.OneEntryPerDoc() {
		t.Errorf("multikey a %v, b.c %v, one entry per doc %v", xi.IsMultikey(0), xi.IsMultikey(1), xi.OneEntryPerDoc())
	}
	for doc, want := range map[string][]string{
		`{"a": [1], "b": {"c": 1}}`: nil,
		`{"b": [{"c": 1}]}`:         {"b.c"},
		`{"b": {"c": [1]}}`:         {"b.c"},
		`{"b": {"c": {"d": [1]}}}`:  nil,
	} {
		if got := xi.NewMultikeyPaths(ext(t, doc)); !slices.Equal(got, want) {
			t.Errorf("%s: new multikey paths %v, want %v", doc, got, want)
		}
	}
	plain := compileIndex(t, `{"a": 1}`, "")
	if !plain.OneEntryPerDoc() || plain.IsMultikey(0) {
		t.Error("a fresh index is multikey")
	}
	id, err := catalog.CompileIndex(&store.Index{ID: store.IDIndexID, Name: store.IDIndexName, Key: ext(t, `{"_id": 1}`), Ready: true})
	if err != nil {
		t.Fatal(err)
	}
	if !id.IsID || !id.Unique || id.NewMultikeyPaths(ext(t, `{"_id": [1]}`)) != nil {
		t.Error("the _id index: not unique, or flagged multikey")
	}
}

// TestCompileIndexOptions checks the options an index spec compiles into.
func TestCompileIndexOptions(t *testing.T) {
	xi := compileIndex(t, `{"a": 1}`, `"unique": true, "hidden": true, "expireAfterSeconds": 60`)
	if !xi.Unique || !xi.Hidden || !xi.HasTTL || xi.TTL != 60 || !xi.ChecksKeys() || xi.PrepareUnique {
		t.Errorf("unique %v hidden %v ttl %v/%d", xi.Unique, xi.Hidden, xi.HasTTL, xi.TTL)
	}
	prep := compileIndex(t, `{"a": 1}`, `"prepareUnique": true`)
	if prep.Unique || !prep.PrepareUnique || !prep.ChecksKeys() {
		t.Errorf("prepareUnique: unique %v prepare %v", prep.Unique, prep.PrepareUnique)
	}
	both := compileIndex(t, `{"a": 1}`, `"unique": true, "prepareUnique": true`)
	if !both.Unique || both.PrepareUnique {
		t.Error("a unique index is also prepareUnique")
	}
	if plain := compileIndex(t, `{"a": 1}`, ""); plain.ChecksKeys() || plain.HasTTL || plain.Sparse || plain.Partial != nil {
		t.Error("a plain index has options")
	}
	_, err := catalog.CompileIndex(&store.Index{ID: 2, Name: "i", Key: ext(t, `{"a": "geoHaystack"}`)})
	wantCode(t, err, mongoerr.CannotCreateIndex, "CannotCreateIndex", "Unknown index plugin 'geoHaystack'")
}
