package bsonx

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// entropy feeds the value generator: math/rand for property tests, fuzzer bytes for fuzzing.
type entropy interface {
	byte() byte
}

// randEntropy draws bytes from a seeded PRNG.
type randEntropy struct{ r *rand.Rand }

// byte returns the next pseudo-random byte.
func (e randEntropy) byte() byte { return byte(e.r.Uint32()) }

// bytesEntropy draws bytes from a fuzzer input, then zeros.
type bytesEntropy struct {
	b []byte
	i int
}

// byte returns the next fuzzer byte, or 0 once they run out.
func (e *bytesEntropy) byte() byte {
	if e.i >= len(e.b) {
		return 0
	}
	e.i++
	return e.b[e.i-1]
}

// gen builds random BSON values of every type, biased toward the cases where orders are hard
// to get right: numbers of different types with equal or adjacent values, strings that prefix
// each other or hold NULs, documents that differ only by field name or type.
type gen struct{ e entropy }

// n returns a number in [0, k).
func (g gen) n(k int) int { return int(g.e.byte()) % k }

// u64 returns 64 random bits.
func (g gen) u64() uint64 {
	var b [8]byte
	for i := range b {
		b[i] = g.e.byte()
	}
	return binary.LittleEndian.Uint64(b[:])
}

// pick returns one of s.
func (g gen) pick(s []string) string { return s[g.n(len(s))] }

// The pools gen draws from: small, so that values collide and prefix each other.
var (
	genStrings = []string{"", "a", "b", "ab", "a\x00", "a\x00b", "\x00", "\xff", "é", "aa", "b\x01"}
	genNames   = []string{"a", "b", "", "aa", "0", "a.b"}
	genOIDs    = []string{oidA, oidB, "000000000000000000000000", "ffffffffffffffffffffffff"}
	genDoubles = []float64{
		0, math.Copysign(0, -1), 1, -1, 0.5, 0.1, -0.1, 2.5, 1e27, 1 << 53, 1<<53 + 2, 0x1p63, -0x1p63,
		0x1p64, 1e300, math.MaxFloat64, -math.MaxFloat64, 5e-324, -5e-324, 2.2250738585072014e-308,
		math.Inf(1), math.Inf(-1), math.NaN(), 1e-7, 123.456,
	}
	genInts = []int64{
		0, 1, -1, 2, 127, 128, 255, 256, 257, -128, math.MaxInt32, math.MinInt32, 1 << 53, 1<<53 + 1,
		-(1 << 53) - 1, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, 1e18, 5, 100,
	}
)

// value returns a random value; depth bounds the nesting.
func (g gen) value(depth int) bsoncore.Value {
	switch k := g.n(24); {
	case k < 10:
		return g.number()
	case k < 12:
		s := g.pick(genStrings) + g.pick(genStrings)
		if g.n(4) == 0 {
			return sym(s)
		}
		return str(s)
	case k < 14 && depth > 0:
		return g.object(depth - 1)
	case k < 16 && depth > 0:
		n := g.n(4)
		vs := make([]bsoncore.Value, n)
		for i := range vs {
			vs[i] = g.value(depth - 1)
		}
		return arr(vs...)
	case k == 16:
		return bin([]byte{0, 4, 0x80}[g.n(3)], g.pick(genStrings))
	case k == 17:
		return oid(g.pick(genOIDs))
	case k == 18:
		return boolean(g.n(2) == 1)
	case k == 19:
		return g.scalar()
	default:
		return g.special(depth)
	}
}

// scalar returns a date, timestamp or regex.
func (g gen) scalar() bsoncore.Value {
	switch g.n(3) {
	case 0:
		return date([]int64{math.MinInt64, -1, 0, 1, 1700000000000, math.MaxInt64}[g.n(6)])
	case 1:
		return ts([]uint32{0, 1, 1 << 31, math.MaxUint32}[g.n(4)], uint32(g.n(3)))
	default:
		return regex(strings.ReplaceAll(g.pick(genStrings), "\x00", ""), []string{"", "i", "im"}[g.n(3)])
	}
}

// special returns one of the rarely used types.
func (g gen) special(depth int) bsoncore.Value {
	switch g.n(7) {
	case 0:
		return dbptr(g.pick(genStrings), g.pick(genOIDs))
	case 1:
		return code(g.pick(genStrings))
	case 2:
		scope := obj()
		if depth > 0 {
			scope = g.object(depth - 1)
		}
		return cws(g.pick(genStrings), scope)
	case 3:
		return minKey()
	case 4:
		return maxKey()
	case 5:
		return null()
	default:
		return undef()
	}
}

// object returns a document of up to three fields.
func (g gen) object(depth int) bsoncore.Value {
	n := g.n(4)
	kv := make([]any, 0, 2*n)
	for range n {
		kv = append(kv, g.pick(genNames), g.value(depth))
	}
	return obj(kv...)
}

// number returns a number of any type, often equal or adjacent to a number of another type.
func (g gen) number() bsoncore.Value {
	switch g.n(12) {
	case 0:
		return i32(int32(g.pick64(genInts)))
	case 1:
		return i64(g.pick64(genInts))
	case 2:
		return i64(int64(g.u64()) >> g.n(64))
	case 3:
		return f64(genDoubles[g.n(len(genDoubles))])
	case 4:
		return f64(math.Float64frombits(g.u64()))
	case 5:
		return f64(float64(g.pick64(genInts)))
	case 6:
		return d128(strconv.FormatInt(g.pick64(genInts), 10) + []string{"", ".0", ".00", "E+0"}[g.n(4)])
	case 7:
		return g.nearDouble()
	case 8:
		return decWordsValue(g.u64(), g.u64())
	case 9:
		return d128(strconv.FormatUint(g.u64()>>g.n(64), 10) + "E" + strconv.Itoa(g.n(80)-40))
	case 10:
		return d128(strconv.FormatUint(g.u64()%1000, 10) + "E" + strconv.Itoa(g.n(256)*48-6176))
	default:
		return d128([]string{"NaN", "-NaN", "Inf", "-Inf", "0", "-0", "0E+300", "1E+6144", "-1E-6176"}[g.n(9)])
	}
}

// pick64 picks an interesting int64, sometimes nudged by one.
func (g gen) pick64(s []int64) int64 {
	return s[g.n(len(s))] + int64(g.n(3)-1)
}

// nearDouble returns a decimal equal to a double or one unit of its 34th digit away from it.
func (g gen) nearDouble() bsoncore.Value {
	f := genDoubles[g.n(len(genDoubles))]
	if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
		f = math.Float64frombits(g.u64()>>2 | 0x3000000000000000)
	}
	prec := []int{33, 16, 20, -1}[g.n(4)]
	s := strconv.FormatFloat(f, 'e', prec, 64)
	mant, exp, _ := strings.Cut(s, "e")
	if prec == 33 {
		// Nudge the last digit: a decimal right next to the double.
		last := mant[len(mant)-1]
		switch {
		case g.n(3) == 0 && last < '9':
			last++
		case g.n(2) == 0 && last > '0':
			last--
		}
		mant = mant[:len(mant)-1] + string(last)
	}
	return d128(mant + "E" + exp)
}
