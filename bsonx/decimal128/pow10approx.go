package decimal128

import (
	"math/bits"
	"sync/atomic"

	"github.com/cockroachdb/apd/v3"
)

// Decimals with |exponent| >= 20 need 10^exponent beyond 64 bits to find their binary floor.
// Instead of exact big-integer arithmetic on every call, binaryApprox multiplies the
// coefficient by a 128-bit truncation of 10^exponent and proves the floor from the error
// bound; only when the product sits within that bound of a boundary does binaryBig run. The
// truncations are computed once per exponent, on first use, and cached: at most 12,321 entries
// (about 400 KB), so hostile decimals cost big arithmetic a bounded number of times per process.

// pow10Approx is T and e with T × 2^(e-127) <= 10^q < (T+1) × 2^(e-127), T's top bit set.
type pow10Approx struct {
	hi, lo uint64
	e      int
}

// minDecExp and maxDecExp bound the exponent of a normalized decimal128.
const (
	minDecExp = minExp
	maxDecExp = 6111 + 33
)

// pow10Cache holds the approximations by exponent - minDecExp, filled on first use.
var pow10Cache [maxDecExp - minDecExp + 1]atomic.Pointer[pow10Approx]

// approxPow10 returns the cached approximation of 10^q.
func approxPow10(q int) *pow10Approx {
	slot := &pow10Cache[q-minDecExp]
	if p := slot.Load(); p != nil {
		return p
	}
	p := computePow10(q)
	slot.Store(p)
	return p
}

// computePow10 computes the 128-bit truncation of 10^q, |q| >= 20.
func computePow10(q int) *pow10Approx {
	var n apd.BigInt
	pow10Big(&n, q)
	l := n.BitLen()
	if q >= 0 {
		// 10^q = n; keep its top 128 bits.
		if l > 128 {
			n.Rsh(&n, uint(l-128))
		} else {
			n.Lsh(&n, uint(128-l))
		}
		return newPow10Approx(&n, l-1)
	}
	// 10^q = 1/n with 2^(l-1) < n < 2^l: floor(2^(l+127) / n) is in [2^127, 2^128).
	var t apd.BigInt
	t.Lsh(apd.NewBigInt(1), uint(l+127))
	t.Quo(&t, &n)
	return newPow10Approx(&t, -l)
}

// newPow10Approx packs a 128-bit integer.
func newPow10Approx(t *apd.BigInt, e int) *pow10Approx {
	var w, mask apd.BigInt
	lo := w.And(t, mask.SetUint64(^uint64(0))).Uint64()
	hi := w.Rsh(t, 64).Uint64()
	return &pow10Approx{hi: hi, lo: lo, e: e}
}

// binaryApprox is Binary for an inexact decimal with |exp| >= 20: it returns the binary
// floor of |p| and ok=true, or ok=false when the approximation cannot decide.
func (p *Parts) binaryApprox() (e int, m uint64, ok bool) {
	if p.Exp < minDecExp || p.Exp > maxDecExp {
		return 0, 0, false
	}
	t := approxPow10(p.Exp)
	// |p| = (P + δ) × 2^(t.e-127) with P = C × T and 0 <= δ < C.
	w := mul128(p.Hi, p.Lo, t.hi, t.lo)
	lp := bitLen256(&w)
	k := lp - 64 // the mantissa is bits [k, k+64) of P
	m = bitsAt(&w, k)
	// If P + C has the same bits there, so has every P + δ.
	w2 := w
	var c uint64
	w2[3], c = bits.Add64(w2[3], p.Lo, 0)
	w2[2], c = bits.Add64(w2[2], p.Hi, c)
	w2[1], c = bits.Add64(w2[1], 0, c)
	w2[0] += c
	if bitLen256(&w2) != lp || bitsAt(&w2, k) != m {
		return 0, 0, false
	}
	return lp - 1 + t.e - 127, m, true
}

// mul128 returns the 256-bit product of two 128-bit numbers, most significant word first.
func mul128(ah, al, bh, bl uint64) (w [4]uint64) {
	h0, l0 := bits.Mul64(al, bl) // weight 0
	h1, l1 := bits.Mul64(al, bh) // weight 64
	h2, l2 := bits.Mul64(ah, bl) // weight 64
	h3, l3 := bits.Mul64(ah, bh) // weight 128
	w[3] = l0
	var c1, c2 uint64
	w[2], c1 = bits.Add64(h0, l1, 0)
	w[2], c2 = bits.Add64(w[2], l2, 0)
	var c3, c4 uint64
	w[1], c3 = bits.Add64(h1, h2, c1)
	w[1], c4 = bits.Add64(w[1], l3, c2)
	w[0] = h3 + c3 + c4
	return w
}

// bitLen256 returns the number of significant bits of w.
func bitLen256(w *[4]uint64) int {
	for i := range w {
		if w[i] != 0 {
			return (4-i)*64 - bits.LeadingZeros64(w[i])
		}
	}
	return 0
}

// bitsAt returns bits [k, k+64) of w, 0 <= k <= 192.
func bitsAt(w *[4]uint64, k int) uint64 {
	i := 3 - k/64 // word holding bit k
	s := k % 64
	v := w[i] >> s
	if s > 0 && i > 0 {
		v |= w[i-1] << (64 - s)
	}
	return v
}
