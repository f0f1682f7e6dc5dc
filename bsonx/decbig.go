package bsonx

import (
	"math"
	"math/big"
)

// Arbitrary-precision fallbacks for decimals far from the int64/double range. They allocate;
// binaryBig only runs when the cached approximation in decpow.go cannot decide.

// binaryBig is binary for exponents whose power of ten does not fit in 64 bits. It allocates,
// which is acceptable for such values (beyond ±1e19 scale).
func (d *dec) binaryBig() (e int, m uint64) {
	c := new(big.Int).SetUint64(d.hi)
	c.Lsh(c, 64).Or(c, new(big.Int).SetUint64(d.lo))
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(d.exp))), nil)
	if d.exp >= 0 {
		c.Mul(c, p)
		n := c.BitLen()
		if n > 64 {
			c.Rsh(c, uint(n-64))
		} else {
			c.Lsh(c, uint(64-n))
		}
		return n - 1, c.Uint64()
	}
	s := 64 - c.BitLen() + p.BitLen()
	if s >= 0 {
		c.Lsh(c, uint(s))
	} else {
		p.Lsh(p, uint(-s))
	}
	c.Quo(c, p)
	if c.BitLen() > 64 {
		c.Rsh(c, 1)
		s--
	}
	return 63 - s, c.Uint64()
}

// decFromBinary returns the decimal128 (high, low words) equal to ±m × 2^(e-63), or ok=false
// if that value needs more than 34 significant digits or is out of decimal128's range.
func decFromBinary(neg bool, e int, m uint64) (h, l uint64, ok bool) {
	sh := e - 63
	if sh > 200 || sh < -200 {
		return 0, 0, false // m × 2^sh then has more than 34 significant digits
	}
	c := new(big.Int).SetUint64(m)
	exp := 0
	if sh >= 0 {
		c.Lsh(c, uint(sh))
	} else {
		// m / 2^k == m × 5^k / 10^k
		k := -sh
		c.Mul(c, new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(k)), nil))
		exp = -k
	}
	ten := big.NewInt(10)
	q, r := new(big.Int), new(big.Int)
	for c.Sign() != 0 {
		q.QuoRem(c, ten, r)
		if r.Sign() != 0 {
			break
		}
		c, q = q, c
		exp++
	}
	return decFromCoef(neg, c, exp)
}

// decFromCoef returns the decimal128 words for ±c × 10^exp, or ok=false if c has more than 34
// digits or exp is out of range.
func decFromCoef(neg bool, c *big.Int, exp int) (h, l uint64, ok bool) {
	if c.BitLen() > 113 {
		return 0, 0, false
	}
	lo := new(big.Int).And(c, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	hi := new(big.Int).Rsh(c, 64).Uint64()
	return decWords(neg, hi, lo, exp)
}

// float64Slow converts a finite decimal to the nearest double through big.Float, exactly
// rounded.
func (d *dec) float64Slow() float64 {
	c := new(big.Int).SetUint64(d.hi)
	c.Lsh(c, 64).Or(c, new(big.Int).SetUint64(d.lo))
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(d.exp))), nil)
	if d.exp >= 0 {
		f, _ := new(big.Float).SetInt(c.Mul(c, p)).Float64()
		return f
	}
	f, _ := new(big.Rat).SetFrac(c, p).Float64()
	return f
}
