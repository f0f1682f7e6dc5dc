package catalog

import (
	"bytes"
	"slices"
	"sync/atomic"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/geo"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// GeoIndex is the compiled form of a 2dsphere index ({loc: "2dsphere"}, possibly with
// other fields: {loc: "2dsphere", category: 1}). An entry's key is the S2 cell of the
// geometry (geo.CellKey), then the keys of the other fields in pattern order; a point is
// indexed by its leaf cell, another geometry by the cells of its covering between the
// coarsest and the finest indexed levels. Like MongoDB's version 2 and 3 indexes it is
// sparse on the geo field: a document without it (or with null) has no entries.
type GeoIndex struct {
	// Path is the 2dsphere field; Rest are the other fields.
	Path string
	Rest []bsonx.IndexField
	// Coarsest and Finest are the levels of the cells non-point geometries are covered by.
	Coarsest, Finest int
}

// Is2dsphere reports whether key pattern key has a "2dsphere" field.
func Is2dsphere(key bsoncore.Document) bool {
	elems, _ := key.Elements()
	for _, el := range elems {
		if s, ok := el.Value().StringValueOK(); ok && s == "2dsphere" {
			return true
		}
	}
	return false
}

// compileGeoIndex builds the Index of 2dsphere index x. Fields stays empty (as for a
// wildcard index), so that no field-wise planning applies to it.
func compileGeoIndex(x *store.Index) (*Index, error) {
	g := &GeoIndex{Coarsest: geo.DefaultCoarsestLevel, Finest: geo.DefaultFinestLevel}
	elems, _ := x.Key.Elements()
	for _, el := range elems {
		if s, ok := el.Value().StringValueOK(); ok && s == "2dsphere" {
			g.Path = el.Key()
			continue
		}
		n, _ := bsonx.NumberAsFloat64(el.Value())
		g.Rest = append(g.Rest, bsonx.IndexField{Path: el.Key(), Desc: n < 0})
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

// keys calls fn with doc's entries in ascending order: each cell of each geometry at Path
// followed by each key of the other fields. A value that is not a valid geometry fails
// with MongoDB's 16755.
func (g *GeoIndex) keys(doc bsoncore.Document, fn func(key []byte) error) error {
	var cells []s2.CellID
	for _, v := range geoValues(doc, g.Path) {
		gm, err := geo.ParseIndexed(v)
		if err != nil {
			return mongoerr.New(mongoerr.Location16755, "Can't extract geo keys: %s  %s", bsonx.ShellDoc(doc), mongoerr.From(err).Message)
		}
		cells = append(cells, geo.Cells(gm, g.Coarsest, g.Finest)...)
	}
	if len(cells) == 0 {
		return nil
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
	out := make([][]byte, 0, len(cells)*len(rest))
	for _, c := range cells {
		prefix := geo.AppendCellKey(nil, c)
		for _, r := range rest {
			out = append(out, append(append([]byte(nil), prefix...), r...))
		}
	}
	slices.SortFunc(out, bytes.Compare)
	out = slices.CompactFunc(out, bytes.Equal)
	for _, k := range out {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
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
