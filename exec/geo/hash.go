package geo

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The defaults of a 2d index's options (MongoDB's GeoHashConverter parameters).
const (
	DefaultHashBits = 26
	DefaultHashMin  = -180.0
	DefaultHashMax  = 180.0
)

// hashBuckets is the number of steps each coordinate is scaled to before its top bits are
// kept: the full 32 bits of a coordinate.
const hashBuckets = 4.0 * 1024 * 1024 * 1024

// Hasher maps flat points to the GeoHash a 2d index stores (MongoDB's GeoHashConverter):
// each coordinate is scaled from [Min, Max] to a 32-bit integer, and the top Bits bits of
// x and y are interleaved from the most significant bit of a uint64 (x first), the rest
// zero. Cells of a quadtree are hash prefixes: the cell of level l holds the hashes whose
// top 2l bits are its own, one contiguous range.
//
//	h, _ := NewHasher(26, -180, 180)
//	hash, _ := h.Hash(-73.97, 40.77)
//	key := AppendHashKey(nil, hash)
type Hasher struct {
	Bits     int
	Min, Max float64
	scaling  float64
	err      float64 // a cell's diagonal plus 1/1000 bucket: what Max is moved in by
}

// NewHasher checks a 2d index's bits, min and max as MongoDB's GeoHashConverter::
// createFromDoc does (InvalidOptions).
func NewHasher(bits int, minV, maxV float64) (*Hasher, error) {
	if bits < 1 || bits > 32 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "bits for hash must be > 0 and <= 32, but %d bits were specified", bits)
	}
	if !(minV < maxV) || math.IsInf(minV, 0) || math.IsInf(maxV, 0) {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "region for hash must be valid and have positive area, but [%s, %s] was specified", num(minV), num(maxV))
	}
	h := &Hasher{Bits: bits, Min: minV, Max: maxV, scaling: hashBuckets / (maxV - minV)}
	if !(h.scaling > 0) || math.IsInf(h.scaling, 0) {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "range [%s, %s] is too small.", num(minV), num(maxV))
	}
	edge := math.Ldexp(maxV-minV, -bits)
	h.err = math.Sqrt2*edge + 0.001/h.scaling
	return h, nil
}

// scale maps a coordinate in [Min, Max] to its 32-bit bucket; Max is moved into the last
// bucket (MongoDB's convertToHashScale).
func (h *Hasher) scale(v float64) uint32 {
	if v >= h.Max {
		v = h.Max - h.err/2
	}
	s := (v - h.Min) * h.scaling
	switch {
	case s <= 0:
		return 0
	case s >= hashBuckets-1:
		return math.MaxUint32
	}
	return uint32(s)
}

// interleave returns the hash of the buckets x and y kept to their top bits bits.
func interleave(x, y uint32, bits int) uint64 {
	var out uint64
	for i := 0; i < bits; i++ {
		if x&(1<<(31-i)) != 0 {
			out |= 1 << (63 - 2*i)
		}
		if y&(1<<(31-i)) != 0 {
			out |= 1 << (62 - 2*i)
		}
	}
	return out
}

// Hash returns the hash of (x, y); false when the point is outside [Min, Max]².
func (h *Hasher) Hash(x, y float64) (uint64, bool) {
	if !(x >= h.Min && x <= h.Max && y >= h.Min && y <= h.Max) {
		return 0, false
	}
	return interleave(h.scale(x), h.scale(y), h.Bits), true
}

// AppendHashKey appends the index key component of hash: a long with its top bit flipped,
// so that the signed order of longs is the order of hashes.
func AppendHashKey(dst []byte, hash uint64) []byte {
	return bsonx.AppendKey(dst, bsonx.Int64Value(int64(hash^1<<63)))
}

// LocationHashes returns the hashes of the locations value v holds in document doc, by
// MongoDB's grammar for 2d indexes (ExpressionKeysPrivate::get2DKeys): v is one location
// ([x, y] or {a: x, b: y}, its first element a number) or an array or document of them;
// empty ones are skipped, and a value that is no array or document has none. Errors are
// MongoDB's: 16804 for a list member that is no location, 13067 and 13068 for a location
// with fewer than two elements, 13026 for one whose first two are not numbers, 13027 for
// one outside the index's bounds.
func (h *Hasher) LocationHashes(v bsoncore.Value, doc bsoncore.Document) ([]uint64, error) {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, nil
	}
	vals, _ := bsoncore.Document(v.Data).Values()
	if len(vals) == 0 {
		return nil, nil
	}
	if bsonx.IsNumber(vals[0].Type) {
		hash, err := h.locationHash(vals, doc)
		if err != nil {
			return nil, err
		}
		return []uint64{hash}, nil
	}
	var out []uint64
	for _, lv := range vals {
		if lv.Type != bsoncore.TypeArray && lv.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.Location16804, "location object expected, location array not in correct format")
		}
		loc, _ := bsoncore.Document(lv.Data).Values()
		if len(loc) == 0 {
			continue
		}
		hash, err := h.locationHash(loc, doc)
		if err != nil {
			return nil, err
		}
		out = append(out, hash)
	}
	return out, nil
}

// locationHash hashes one location's elements (GeoHashConverter::hash).
func (h *Hasher) locationHash(loc []bsoncore.Value, doc bsoncore.Document) (uint64, error) {
	cause := " :: caused by :: " + bsonx.ShellDoc(doc)
	switch {
	case len(loc) == 0:
		return 0, mongoerr.New(mongoerr.Location13067, "geo field is empty%s", cause)
	case len(loc) == 1:
		return 0, mongoerr.New(mongoerr.Location13068, "geo field only has 1 element%s", cause)
	case !bsonx.IsNumber(loc[0].Type) || !bsonx.IsNumber(loc[1].Type):
		return 0, mongoerr.New(mongoerr.Location13026, "geo values must be 'legacy coordinate pairs' for 2d indexes%s", cause)
	}
	x, _ := bsonx.NumberAsFloat64(loc[0])
	y, _ := bsonx.NumberAsFloat64(loc[1])
	hash, ok := h.Hash(x, y)
	if !ok {
		return 0, mongoerr.New(mongoerr.Location13027, "point not in interval of [ %s, %s ]%s", num(h.Min), num(h.Max), cause)
	}
	return hash, nil
}
