package bsonx

import (
	"encoding/binary"
	"math"
	"math/bits"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx/decimal128"
)

// Decoding of numbers (see keynum.go for the encoding).

// number reads the rest of a number whose tag has been read and emits it.
func (r *keyReader) number(tag byte) (bsoncore.Type, bool) {
	switch tag {
	case tagNaN:
		return r.emitDouble(math.NaN())
	case tagNegInf:
		return r.emitDouble(math.Inf(-1))
	case tagPosInf:
		return r.emitDouble(math.Inf(1))
	case tagZero:
		r.emit(0, 0, 0, 0)
		return bsoncore.TypeInt32, true
	}
	neg := tag < tagZero
	var nx byte
	if neg {
		nx = 0xFF
	}
	e, ok := r.exponent(tag, nx)
	if !ok {
		return 0, false
	}
	m, between, ok := r.mantissa(nx)
	if !ok {
		return 0, false
	}
	if !between {
		return r.emitBinary(neg, e, m)
	}
	return r.decimalForm(neg, nx)
}

// exponent returns the binary exponent given by a number's tag and, for exponents outside
// [0, 63], the two bytes after it.
func (r *keyReader) exponent(tag, nx byte) (int, bool) {
	switch {
	case tag > tagNegBig && tag < tagNegSmall:
		return int(tagNegInt0 - tag), true
	case tag > tagPosSmall && tag < tagPosBig:
		return int(tag - tagPosInt0), true
	}
	hi, ok1 := r.next()
	lo, ok2 := r.next()
	e := int(uint16(hi^nx)<<8|uint16(lo^nx)) - 0x8000
	small := tag == tagNegSmall || tag == tagPosSmall
	return e, ok1 && ok2 && (small && e < 0 || !small && e > 63)
}

// mantissa reads the fraction groups and returns m (top bit set) and whether a decimal's own
// form follows.
func (r *keyReader) mantissa(nx byte) (m uint64, between bool, ok bool) {
	var frac uint64
	for i := 0; ; i++ {
		b, ok := r.next()
		if !ok {
			return 0, false, false
		}
		b ^= nx
		frac |= uint64(b>>1) << (57 - 7*i)
		if b&1 == 0 {
			return 1<<63 | frac>>1, false, true
		}
		if r.pos >= len(r.src) {
			return 0, false, false
		}
		if i == 8 || r.src[r.pos]^r.x^nx == 0 {
			mk, _ := r.next()
			return 1<<63 | frac>>1, true, mk^nx == 0
		}
	}
}

// decimalForm reads a decimal's exponent and digit pairs and emits the decimal128.
func (r *keyReader) decimalForm(neg bool, nx byte) (bsoncore.Type, bool) {
	hi, ok1 := r.next()
	lo, ok2 := r.next()
	if !ok1 || !ok2 {
		return 0, false
	}
	adj := int(uint16(hi^nx)<<8|uint16(lo^nx)) - 0x8000
	var buf [decimal128.Digits]byte
	n := 0
	for {
		b, ok := r.next()
		if !ok || n >= len(buf) {
			return 0, false
		}
		b ^= nx
		p := uint64(b >> 1)
		if p > 99 {
			return 0, false
		}
		more := b&1 == 1
		d1, d2 := p/10, p%10
		if n == 0 && d1 == 0 {
			return 0, false
		}
		buf[n] = byte(d1)
		n++
		if more || d2 != 0 {
			if n >= len(buf) {
				return 0, false
			}
			buf[n] = byte(d2)
			n++
		}
		if !more {
			break
		}
	}
	d, ok := decimal128.FromDigits(neg, buf[:n], adj-(n-1))
	if !ok {
		return 0, false
	}
	if r.build {
		r.out = bsoncore.AppendDecimal128(r.out, d.H, d.L)
	}
	return bsoncore.TypeDecimal128, true
}

// emitDouble emits a double.
func (r *keyReader) emitDouble(f float64) (bsoncore.Type, bool) {
	if r.build {
		r.out = binary.LittleEndian.AppendUint64(r.out, math.Float64bits(f))
	}
	return bsoncore.TypeDouble, true
}

// emitBinary emits ±m × 2^(e-63) as an int32, int64, double or decimal128, the first of those
// that holds it exactly.
func (r *keyReader) emitBinary(neg bool, e int, m uint64) (bsoncore.Type, bool) {
	if e >= 0 && e <= 63 && (e == 63 || m<<(e+1) == 0) {
		u := m >> (63 - e)
		var i int64
		fits := true
		switch {
		case !neg && u <= math.MaxInt64:
			i = int64(u)
		case neg && u <= 1<<63:
			i = int64(-u)
		default:
			fits = false
		}
		if fits {
			if i >= math.MinInt32 && i <= math.MaxInt32 {
				if r.build {
					r.out = binary.LittleEndian.AppendUint32(r.out, uint32(int32(i)))
				}
				return bsoncore.TypeInt32, true
			}
			if r.build {
				r.out = binary.LittleEndian.AppendUint64(r.out, uint64(i))
			}
			return bsoncore.TypeInt64, true
		}
	}
	tz := bits.TrailingZeros64(m)
	if low := e - 63 + tz; e <= 1023 && low >= -1074 && e-low < 53 {
		f := math.Ldexp(float64(m>>tz), low)
		if neg {
			f = -f
		}
		return r.emitDouble(f)
	}
	if !r.build {
		return bsoncore.TypeDecimal128, true
	}
	d, ok := decimal128.FromBinary(neg, e, m)
	if !ok {
		return 0, false
	}
	r.out = bsoncore.AppendDecimal128(r.out, d.H, d.L)
	return bsoncore.TypeDecimal128, true
}
