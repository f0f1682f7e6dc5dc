package match

import (
	"encoding/binary"
	"math"

	"github.com/cleavedb/cleave/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// typeLeaf is $type: the value's BSON type is in the set ("number" covers the four
// numeric types). A leaf array is tested both as a whole ("array") and element-wise.
// Type code 0 (EOO) is accepted as MongoDB does and matches a missing value.
type typeLeaf struct {
	types   [256]bool // indexed by the type byte; MinKey is 0xFF and MaxKey 0x7F
	numbers bool
}

func (t *typeLeaf) match(v bsoncore.Value) (bool, int) {
	if t.types[byte(v.Type)] || t.numbers && bsonx.IsNumber(v.Type) {
		return true, -1
	}
	return false, -1
}

// modLeaf is $mod: [divisor, remainder] on the value truncated to an integer
// (MongoDB 5.0+: NaN, infinities and values outside int64 never match).
type modLeaf struct{ div, rem int64 }

func (m *modLeaf) match(v bsoncore.Value) (bool, int) {
	var x int64
	switch v.Type {
	case bsoncore.TypeInt32:
		x = int64(int32(binary.LittleEndian.Uint32(v.Data)))
	case bsoncore.TypeInt64:
		x = int64(binary.LittleEndian.Uint64(v.Data))
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, _ := bsonx.NumberAsFloat64(v)
		t, ok := truncInt64(f)
		if !ok {
			return false, -1
		}
		x = t
	default:
		return false, -1
	}
	return safeMod(x, m.div) == m.rem, -1
}

// truncInt64 truncates f toward zero; ok is false for NaN, infinities and values that do
// not fit an int64.
func truncInt64(f float64) (int64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	t := math.Trunc(f)
	if t >= 0x1p63 || t < -0x1p63 {
		return 0, false
	}
	return int64(t), true
}

// safeMod is x % d with MinInt64 % -1 defined as 0 (C++ remainder semantics otherwise).
func safeMod(x, d int64) int64 {
	if d == -1 {
		return 0
	}
	return x % d
}

// sizeLeaf is $size: the value is an array of exactly n elements.
type sizeLeaf struct{ n int }

func (s *sizeLeaf) match(v bsoncore.Value) (bool, int) {
	return v.Type == bsoncore.TypeArray && countElems(v.Data) == s.n, -1
}

// bitsOp is one of the four bit-test operators.
type bitsOp uint8

const (
	bitsAllSet bitsOp = iota
	bitsAllClear
	bitsAnySet
	bitsAnyClear
)

// bitsLeaf tests bit positions of an integral number (two's complement, sign-extended
// beyond bit 63) or of BinData bytes (little-endian bit order, zero beyond the data).
type bitsLeaf struct {
	op        bitsOp
	positions []uint32 // sorted, distinct
	mask      uint64   // positions below 64
	high      bool     // some position is >= 64
}

// newBits builds a bit test over positions.
func newBits(op bitsOp, positions []uint32) *bitsLeaf {
	b := &bitsLeaf{op: op, positions: positions}
	for _, p := range positions {
		if p < 64 {
			b.mask |= 1 << p
		} else {
			b.high = true
		}
	}
	return b
}

func (b *bitsLeaf) match(v bsoncore.Value) (bool, int) {
	switch v.Type {
	case bsoncore.TypeBinary:
		data := binPayload(v.Data)
		return b.testBytes(data), -1
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		x, ok := bsonx.NumberAsInt64(v)
		if !ok {
			return false, -1
		}
		return b.testInt(x), -1
	}
	return false, -1
}

// testInt applies the operator to an integer.
func (b *bitsLeaf) testInt(x int64) bool {
	set := uint64(x) & b.mask
	neg := x < 0
	switch b.op {
	case bitsAllSet:
		return set == b.mask && (!b.high || neg)
	case bitsAllClear:
		return set == 0 && (!b.high || !neg)
	case bitsAnySet:
		return set != 0 || b.high && neg
	default:
		return set != b.mask || b.high && !neg
	}
}

// testBytes applies the operator to BinData bytes.
func (b *bitsLeaf) testBytes(data []byte) bool {
	for _, p := range b.positions {
		bit := false
		if i := int(p / 8); i < len(data) {
			bit = data[i]&(1<<(p%8)) != 0
		}
		switch b.op {
		case bitsAllSet:
			if !bit {
				return false
			}
		case bitsAllClear:
			if bit {
				return false
			}
		case bitsAnySet:
			if bit {
				return true
			}
		default:
			if !bit {
				return true
			}
		}
	}
	return b.op == bitsAllSet || b.op == bitsAllClear
}

// elemMatchObject is $elemMatch with a query on the elements: some element that is a
// document (or an array, which MongoDB also treats as an object) matches sub.
type elemMatchObject struct{ sub node }

func (e *elemMatchObject) match(v bsoncore.Value) (bool, int) {
	if v.Type != bsoncore.TypeArray {
		return false, -1
	}
	b := body(v.Data)
	for idx := 0; ; idx++ {
		t, _, val, rest, ok := next(b)
		if !ok {
			return false, -1
		}
		b = rest
		if t != bsoncore.TypeEmbeddedDocument && t != bsoncore.TypeArray {
			continue
		}
		if m, _, _ := e.sub.eval(val); m {
			return true, idx
		}
	}
}

// elemMatchValue is $elemMatch with operators: some element satisfies all of them.
type elemMatchValue struct{ sub leaf }

func (e *elemMatchValue) match(v bsoncore.Value) (bool, int) {
	if v.Type != bsoncore.TypeArray {
		return false, -1
	}
	b := body(v.Data)
	for idx := 0; ; idx++ {
		t, _, val, rest, ok := next(b)
		if !ok {
			return false, -1
		}
		b = rest
		if m, _ := e.sub.match(bsoncore.Value{Type: t, Data: val}); m {
			return true, idx
		}
	}
}
