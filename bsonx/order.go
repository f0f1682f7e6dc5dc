package bsonx

import (
	"bytes"
	"cmp"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Canonical type ranks, from MongoDB's canonicalizeBSONType (src/mongo/bson/bsontypes.h).
// Values of different ranks order by rank; values of one rank compare by value.
const (
	rankMinKey    = -1
	rankUndefined = 0 // also EOO, the zero Type
	rankNull      = 5
	rankNumber    = 10
	rankString    = 15 // string and symbol
	rankObject    = 20
	rankArray     = 25
	rankBinary    = 30
	rankObjectID  = 35
	rankBool      = 40
	rankDate      = 45
	rankTimestamp = 47
	rankRegex     = 50
	rankDBPointer = 55
	rankCode      = 60
	rankCodeScope = 65
	rankMaxKey    = 127
	rankUnknown   = 128 // not a BSON type; MongoDB would refuse it, we sort it last
)

// CanonicalRank returns MongoDB's canonical rank of a BSON type (canonicalizeBSONType):
// MinKey -1, undefined 0, null 5, numbers 10, string and symbol 15, object 20, array 25,
// binData 30, ObjectId 35, bool 40, date 45, timestamp 47, regex 50, dbPointer 55,
// javascript 60, javascriptWithScope 65, MaxKey 127. The zero Type (EOO) ranks with
// undefined, as in MongoDB; a byte that is no BSON type ranks 128, after MaxKey.
func CanonicalRank(t bsoncore.Type) int {
	switch t {
	case bsoncore.TypeMinKey:
		return rankMinKey
	case 0, bsoncore.TypeUndefined:
		return rankUndefined
	case bsoncore.TypeNull:
		return rankNull
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return rankNumber
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return rankString
	case bsoncore.TypeEmbeddedDocument:
		return rankObject
	case bsoncore.TypeArray:
		return rankArray
	case bsoncore.TypeBinary:
		return rankBinary
	case bsoncore.TypeObjectID:
		return rankObjectID
	case bsoncore.TypeBoolean:
		return rankBool
	case bsoncore.TypeDateTime:
		return rankDate
	case bsoncore.TypeTimestamp:
		return rankTimestamp
	case bsoncore.TypeRegex:
		return rankRegex
	case bsoncore.TypeDBPointer:
		return rankDBPointer
	case bsoncore.TypeJavaScript:
		return rankCode
	case bsoncore.TypeCodeWithScope:
		return rankCodeScope
	case bsoncore.TypeMaxKey:
		return rankMaxKey
	}
	return rankUnknown
}

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b in MongoDB's total order
// of BSON values (no collation): first by canonical type rank, then by value. Numbers of all
// four types compare exactly by value (NaN equals NaN and sorts below every other number,
// -0 equals 0), strings and symbols by bytes, objects element by element (type rank, field
// name, value; fewer elements first), arrays element by element.
func Compare(a, b bsoncore.Value) int {
	if a.Type != b.Type {
		ra, rb := CanonicalRank(a.Type), CanonicalRank(b.Type)
		if ra != rb {
			return cmp.Compare(ra, rb)
		}
		if ra == rankUnknown {
			return cmp.Compare(int(a.Type), int(b.Type))
		}
	}
	return compareValues(a.Type, a.Data, b.Type, b.Data)
}

// CompareDocuments compares two documents as MongoDB compares embedded objects.
func CompareDocuments(a, b bsoncore.Document) int {
	return compareBodies(DocBody(a), DocBody(b))
}

// Equal reports whether Compare(a, b) == 0, faster for the common cases of equality
// matching: same-typed scalars compare without the general machinery.
func Equal(a, b bsoncore.Value) bool {
	if a.Type == b.Type {
		switch a.Type {
		case bsoncore.TypeInt32:
			return readI32(a.Data) == readI32(b.Data)
		case bsoncore.TypeInt64, bsoncore.TypeDateTime, bsoncore.TypeTimestamp:
			return readI64(a.Data) == readI64(b.Data)
		case bsoncore.TypeDouble:
			fa, fb := math.Float64frombits(readU64(a.Data)), math.Float64frombits(readU64(b.Data))
			return fa == fb || math.IsNaN(fa) && math.IsNaN(fb)
		case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeJavaScript:
			return bytes.Equal(readStr(a.Data), readStr(b.Data))
		case bsoncore.TypeObjectID:
			return bytes.Equal(readOID(a.Data), readOID(b.Data))
		case bsoncore.TypeBoolean:
			return readBool(a.Data) == readBool(b.Data)
		case bsoncore.TypeNull, bsoncore.TypeUndefined, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
			return true
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			if bytes.Equal(a.Data, b.Data) {
				return true
			}
		}
	} else if CanonicalRank(a.Type) != CanonicalRank(b.Type) {
		return false
	}
	return Compare(a, b) == 0
}

// compareValues compares two values of the same canonical rank.
func compareValues(ta bsoncore.Type, a []byte, tb bsoncore.Type, b []byte) int {
	switch ta {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return compareNumbers(ta, a, tb, b)
	case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeJavaScript:
		return bytes.Compare(readStr(a), readStr(b))
	case bsoncore.TypeEmbeddedDocument:
		return compareBodies(DocBody(a), DocBody(b))
	case bsoncore.TypeArray:
		return compareArrays(DocBody(a), DocBody(b))
	case bsoncore.TypeBinary:
		sa, da := readBinary(a)
		sb, db := readBinary(b)
		if len(da) != len(db) {
			return cmp.Compare(len(da), len(db))
		}
		if sa != sb {
			return cmp.Compare(int(sa), int(sb))
		}
		return bytes.Compare(da, db)
	case bsoncore.TypeObjectID:
		return bytes.Compare(readOID(a), readOID(b))
	case bsoncore.TypeBoolean:
		return cmpBool(readBool(a), readBool(b))
	case bsoncore.TypeDateTime:
		return cmpI64(readI64(a), readI64(b))
	case bsoncore.TypeTimestamp:
		return cmpU64(readU64(a), readU64(b))
	case bsoncore.TypeRegex:
		pa, oa := readRegex(a)
		pb, ob := readRegex(b)
		if c := bytes.Compare(pa, pb); c != 0 {
			return c
		}
		return bytes.Compare(oa, ob)
	case bsoncore.TypeDBPointer:
		na, ia := readDBPointer(a)
		nb, ib := readDBPointer(b)
		if len(na) != len(nb) {
			return cmp.Compare(len(na), len(nb))
		}
		if c := bytes.Compare(na, nb); c != 0 {
			return c
		}
		return bytes.Compare(ia, ib)
	case bsoncore.TypeCodeWithScope:
		ca, sa := readCodeWithScope(a)
		cb, sb := readCodeWithScope(b)
		if c := bytes.Compare(ca, cb); c != 0 {
			return c
		}
		return compareBodies(sa, sb)
	}
	return 0 // MinKey, MaxKey, null, undefined: one value per rank
}

// compareBodies compares two document bodies element by element: canonical type rank, then
// field name, then value; a body that runs out first sorts first.
func compareBodies(a, b []byte) int {
	for {
		ta, ka, va, ra, oka := NextElement(a)
		tb, kb, vb, rb, okb := NextElement(b)
		if !oka || !okb {
			return cmpBool(oka, okb)
		}
		if ta != tb {
			if c := cmp.Compare(CanonicalRank(ta), CanonicalRank(tb)); c != 0 {
				return c
			}
		}
		if c := bytes.Compare(ka, kb); c != 0 {
			return c
		}
		if c := compareValues(ta, va, tb, vb); c != 0 {
			return c
		}
		a, b = ra, rb
	}
}

// compareArrays compares two array bodies element by element, ignoring the index keys.
func compareArrays(a, b []byte) int {
	for {
		ta, _, va, ra, oka := NextElement(a)
		tb, _, vb, rb, okb := NextElement(b)
		if !oka || !okb {
			return cmpBool(oka, okb)
		}
		if ta != tb {
			if c := cmp.Compare(CanonicalRank(ta), CanonicalRank(tb)); c != 0 {
				return c
			}
		}
		if c := compareValues(ta, va, tb, vb); c != 0 {
			return c
		}
		a, b = ra, rb
	}
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// cmpU64 compares two uint64.
func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
