package decimal128

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestBinaryApprox checks the cached 128-bit powers of ten against exact big-integer
// arithmetic: both must give the same binary floor whenever the approximation decides.
func TestBinaryApprox(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	checked := 0
	check := func(s string, d Parts) {
		t.Helper()
		if _, _, exact := d.exactBinary(); exact || d.Kind != KindFinite || d.Exp > -20 && d.Exp < 20 {
			return
		}
		checked++
		e1, m1, ok := d.binaryApprox()
		if !ok {
			return // undecided: binary falls back to binaryBig
		}
		if e2, m2 := d.binaryBig(); e1 != e2 || m1 != m2 {
			t.Fatalf("%s: approximation gives %d %#x, exact %d %#x", s, e1, m1, e2, m2)
		}
	}
	for _, s := range []string{
		"1E+20", "1E-20", "9.999999999999999999999999999999999E+6144", "1E-6176",
		"1234567890123456789012345678901234E-6176", "5E-324", "1.7976931348623157E+308", "3E+38", "3E+39",
	} {
		check(s, mustParse(s).Parts())
	}
	for range 100000 {
		// Random coefficients of 1 to 34 digits at random exponents.
		digits := make([]byte, 1+rng.IntN(Digits))
		for i := range digits {
			digits[i] = byte(rng.IntN(10))
		}
		v, ok := FromDigits(rng.IntN(2) == 0, digits, rng.IntN(maxExp-minExp+1)+minExp)
		if ok {
			check(v.String(), v.Parts())
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d decimals exercised the approximation", checked)
	}
}

// TestPow10Approx checks the defining inequality T × 2^(e-127) <= 10^q < (T+1) × 2^(e-127).
func TestPow10Approx(t *testing.T) {
	for _, q := range []int{20, 38, 39, 100, 6144, -20, -21, -100, -6176} {
		p := computePow10(q)
		tv := new(big.Int).SetUint64(p.hi)
		tv.Lsh(tv, 64).Or(tv, new(big.Int).SetUint64(p.lo))
		if tv.BitLen() != 128 {
			t.Fatalf("q=%d: T has %d bits", q, tv.BitLen())
		}
		lo := new(big.Rat).SetInt(tv)
		hi := new(big.Rat).SetInt(new(big.Int).Add(tv, big.NewInt(1)))
		scale := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(max(p.e-127, 127-p.e))))
		if p.e-127 >= 0 {
			lo.Mul(lo, scale)
			hi.Mul(hi, scale)
		} else {
			lo.Quo(lo, scale)
			hi.Quo(hi, scale)
		}
		pow := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(q, -q))), nil))
		if q < 0 {
			pow.Inv(pow)
		}
		if lo.Cmp(pow) > 0 || hi.Cmp(pow) <= 0 {
			t.Errorf("q=%d: 10^q is not in [T, T+1) × 2^(e-127)", q)
		}
	}
}

// TestNumDigits checks numDigits at every power of ten and its neighbours.
func TestNumDigits(t *testing.T) {
	for k := 0; k < len(pow10x128); k++ {
		p := pow10x128[k]
		if got := numDigits(p[0], p[1]); got != k+1 {
			t.Errorf("numDigits(10^%d) = %d", k, got)
		}
		if k > 0 {
			h, l := p[0], p[1]-1
			if p[1] == 0 {
				h--
			}
			if got := numDigits(h, l); got != k {
				t.Errorf("numDigits(10^%d-1) = %d", k, got)
			}
		}
	}
}
