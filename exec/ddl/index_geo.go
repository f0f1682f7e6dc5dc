package ddl

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// geo2dsphereVersion is the 2dsphereIndexVersion cleave builds (MongoDB's current).
const geo2dsphereVersion = 3

// checkGeoOption checks a 2dsphere index option: the index version (1 to 3, all built as
// version 3) and the indexed levels (0 to 30).
func checkGeoOption(key string, v bsoncore.Value) (bool, error) {
	n, ok := bsonx.NumberAsInt64(v)
	if f, isNum := bsonx.NumberAsFloat64(v); !isNum || float64(n) != f {
		ok = false
	}
	if key == "2dsphereIndexVersion" {
		if !ok || n < 1 || n > 3 {
			return false, mongoerr.New(mongoerr.CannotCreateIndex, "unsupported geo index version { 2dsphereIndexVersion : %s }, only support versions: [1,2,3]", bsonx.ShellString(v))
		}
		return true, nil
	}
	if !ok || n < 0 || n > 30 {
		return false, mongoerr.New(mongoerr.CannotCreateIndex, "%s must be an integer between 0 and 30, found %s", key, bsonx.ShellString(v))
	}
	return true, nil
}

// validateGeo applies the rules of 2dsphere indexes to x: one 2dsphere field, no hashed
// field, levels in order; and records the index version in the spec when the client gave
// none, as MongoDB's listIndexes shows it. A 2d index's are validate2d's.
func validateGeo(x *store.Index, elems []bsoncore.Element) error {
	if catalog.Is2d(x.Key) {
		return validate2d(x, elems)
	}
	n := 0
	for _, el := range elems {
		if s, ok := el.Value().StringValueOK(); ok {
			switch s {
			case "2dsphere":
				n++
			case "hashed":
				if catalog.Is2dsphere(x.Key) {
					return mongoerr.New(mongoerr.NotImplemented, "a 2dsphere index with a hashed field is not supported by cleave")
				}
			}
		}
	}
	if n == 0 {
		return nil
	}
	if n > 1 {
		return mongoerr.New(mongoerr.NotImplemented, "a 2dsphere index with more than one 2dsphere field is not supported by cleave")
	}
	coarsest, finest := int64(-1), int64(31)
	if x.Spec != nil {
		coarsest, _ = bsonx.NumberAsInt64(x.Spec.Lookup("coarsestIndexedLevel"))
		if f, ok := bsonx.NumberAsInt64(x.Spec.Lookup("finestIndexedLevel")); ok {
			finest = f
		}
	}
	if finest < coarsest {
		return mongoerr.New(mongoerr.CannotCreateIndex, "finestIndexedLevel must be greater than coarsestIndexedLevel")
	}
	if x.Spec == nil || x.Spec.Lookup("2dsphereIndexVersion").Type == 0 {
		idx, b := bsoncore.AppendDocumentStart(nil)
		if x.Spec != nil {
			b = append(b, x.Spec[4:len(x.Spec)-1]...)
		}
		b = bsoncore.AppendInt32Element(b, "2dsphereIndexVersion", geo2dsphereVersion)
		x.Spec, _ = bsoncore.AppendDocumentEnd(b, idx)
	}
	return nil
}

// validate2d applies the rules of 2d indexes to x (MongoDB's validateKeyPattern and
// ExpressionParams::parseTwoDParams): no other index plugin, one 2d field and first, and
// bits, min and max a GeoHash can be built with (InvalidOptions otherwise).
func validate2d(x *store.Index, elems []bsoncore.Element) error {
	geoFields := 0
	for i, el := range elems {
		s, ok := el.Value().StringValueOK()
		if !ok {
			continue
		}
		if s != "2d" {
			return mongoerr.New(mongoerr.CannotCreateIndex, "Can't use more than one index plugin for a single index.")
		}
		if geoFields++; geoFields > 1 {
			return mongoerr.New(mongoerr.Location16800, "can't have 2 geo fields")
		}
		if i > 0 {
			return mongoerr.New(mongoerr.Location16801, "2d has to be first in index")
		}
	}
	_, err := catalog.HasherOf(x.Spec)
	return err
}
