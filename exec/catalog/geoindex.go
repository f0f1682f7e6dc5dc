package catalog

import (
	"bytes"
	"slices"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/geo"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// GeoIndex is the compiled form of a 2dsphere or 2d index ({loc: "2dsphere"} or
// {loc: "2d"}, possibly with other fields: {loc: "2dsphere", category: 1}). An entry's key
// is the geo component, then the keys of the other fields in pattern order. For a
// 2dsphere index the component is an S2 cell (geo.AppendCellKey): a point is indexed by
// its leaf cell, another geometry by the cells of its covering between the coarsest and
// the finest indexed levels. For a 2d index (Flat set) it is the GeoHash of each legacy
// location (geo.AppendHashKey). Like MongoDB's 2dsphere version 2 and 3 and 2d indexes
// it is sparse on the geo field: a document without it (or with null) has no entries.
type GeoIndex struct {
	// Path is the geo field; Rest are the other fields.
	Path string
	Rest []bsonx.IndexField
	// Coarsest and Finest are the levels of the cells non-point geometries are covered by.
	Coarsest, Finest int
	// Flat is set for a 2d index: its bits, min and max.
	Flat *geo.Hasher
}

// Is2dsphere reports whether key pattern key has a "2dsphere" field.
func Is2dsphere(key bsoncore.Document) bool { return hasPlugin(key, "2dsphere") }

// Is2d reports whether key pattern key has a "2d" field.
func Is2d(key bsoncore.Document) bool { return hasPlugin(key, "2d") }

// hasPlugin reports whether key pattern key has a field whose value is the string name.
func hasPlugin(key bsoncore.Document, name string) bool {
	elems, _ := key.Elements()
	for _, el := range elems {
		if s, ok := el.Value().StringValueOK(); ok && s == name {
			return true
		}
	}
	return false
}

// compileGeoIndex builds the Index of 2dsphere or 2d index x. Fields stays empty (as for
// a wildcard index), so that no field-wise planning applies to it.
func compileGeoIndex(x *store.Index) (*Index, error) {
	g := &GeoIndex{Coarsest: geo.DefaultCoarsestLevel, Finest: geo.DefaultFinestLevel}
	elems, _ := x.Key.Elements()
	for _, el := range elems {
		if s, ok := el.Value().StringValueOK(); ok && (s == "2dsphere" || s == "2d") {
			g.Path = el.Key()
			continue
		}
		n, _ := bsonx.NumberAsFloat64(el.Value())
		g.Rest = append(g.Rest, bsonx.IndexField{Path: el.Key(), Desc: n < 0})
	}
	if Is2d(x.Key) {
		var err error
		if g.Flat, err = HasherOf(x.Spec); err != nil {
			return nil, err
		}
	}
	if x.Spec != nil {
		if n, ok := bsonx.NumberAsInt64(x.Spec.Lookup("coarsestIndexedLevel")); ok {
			g.Coarsest = int(n)
		}
		if n, ok := bsonx.NumberAsInt64(x.Spec.Lookup("finestIndexedLevel")); ok {
			g.Finest = int(n)
		}
	}
	xi := &Index{Meta: x, Geo: g, Use: new(atomic.Pointer[IndexUse])}
	if x.Spec != nil {
		xi.Hidden = SpecBool(x.Spec, "hidden")
		if pf, ok := x.Spec.Lookup("partialFilterExpression").DocumentOK(); ok {
			var err error
			if xi.Partial, err = match.Compile(pf, nil); err != nil {
				return nil, err
			}
		}
	}
	return xi, nil
}

// HasherOf returns the hasher of a 2d index spec: its bits, min and max, MongoDB's
// defaults for those it lacks.
func HasherOf(spec bsoncore.Document) (*geo.Hasher, error) {
	opts := [3]float64{geo.DefaultHashBits, geo.DefaultHashMin, geo.DefaultHashMax}
	for i, name := range [3]string{"bits", "min", "max"} {
		v := bsoncore.Value{}
		if spec != nil {
			v = spec.Lookup(name)
		}
		if v.Type == 0 {
			continue
		}
		f, ok := bsonx.NumberAsFloat64(v)
		if !ok {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "wrong type for field (%s) %s != double", name, bsonx.TypeName(v.Type))
		}
		opts[i] = f
	}
	return geo.NewHasher(int(opts[0]), opts[1], opts[2])
}

// keys calls fn with doc's entries in ascending order: each geo component of the values
// at Path followed by each key of the other fields. A value a 2dsphere index cannot parse
// fails with MongoDB's 16755; a 2d index's errors are geo.Hasher.LocationHashes'.
func (g *GeoIndex) keys(doc bsoncore.Document, fn func(key []byte) error) error {
	prefixes, err := g.geoKeys(doc)
	if err != nil || len(prefixes) == 0 {
		return err
	}
	rest := [][]byte{nil}
	if len(g.Rest) > 0 {
		rest = rest[:0]
		if _, err := bsonx.AppendIndexKeys(doc, g.Rest, func(k []byte) error {
			rest = append(rest, append([]byte(nil), k...))
			return nil
		}); err != nil {
			return keyError(err)
		}
	}
	out := make([][]byte, 0, len(prefixes)*len(rest))
	for _, prefix := range prefixes {
		for _, r := range rest {
			out = append(out, append(append([]byte(nil), prefix...), r...))
		}
	}
	return emitDistinct(out, fn)
}

// geoKeys returns the geo components of doc's entries: S2 cells or GeoHashes.
func (g *GeoIndex) geoKeys(doc bsoncore.Document) ([][]byte, error) {
	var out [][]byte
	if g.Flat != nil {
		var err error
		bsonx.WalkPath(doc, g.Path, func(m bsonx.PathMatch) bool {
			if m.Missing || m.InLeafArray {
				return true
			}
			var hashes []uint64
			if hashes, err = g.Flat.LocationHashes(m.Value, doc); err != nil {
				return false
			}
			for _, h := range hashes {
				out = append(out, geo.AppendHashKey(nil, h))
			}
			return true
		})
		return out, err
	}
	for _, v := range geoValues(doc, g.Path) {
		gm, err := geo.ParseIndexed(v)
		if err != nil {
			return nil, mongoerr.New(mongoerr.Location16755, "Can't extract geo keys: %s  %s", bsonx.ShellDoc(doc), mongoerr.From(err).Message)
		}
		for _, c := range geo.Cells(gm, g.Coarsest, g.Finest) {
			out = append(out, geo.AppendCellKey(nil, c))
		}
	}
	return out, nil
}

// geoValues returns the geometries a document holds at path: arrays along the path are
// expanded, and an array at its end is one legacy point ([x, y]) or a list of geometries.
// Null and missing values have none.
func geoValues(doc bsoncore.Document, path string) []bsoncore.Value {
	var out []bsoncore.Value
	bsonx.WalkPath(doc, path, func(m bsonx.PathMatch) bool {
		if m.Missing || m.InLeafArray || m.Value.Type == bsoncore.TypeNull {
			return true
		}
		v := m.Value
		if v.Type == bsoncore.TypeArray {
			vals, _ := v.Array().Values()
			if len(vals) == 0 {
				return true
			}
			if !bsonx.IsNumber(vals[0].Type) {
				out = append(out, vals...)
				return true
			}
		}
		out = append(out, v)
		return true
	})
	return out
}

// emitDistinct calls fn with each distinct key of keys, in order (an index's entries for one
// document: a document whose values repeat a key indexes it once).
func emitDistinct(keys [][]byte, fn func([]byte) error) error {
	slices.SortFunc(keys, bytes.Compare)
	for _, k := range slices.CompactFunc(keys, bytes.Equal) {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}
