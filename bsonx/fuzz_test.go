package bsonx

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Fuzz inputs describe a value in one of two ways, chosen by the low bit of the first byte:
// raw (0): the second byte is a type and the rest its raw bytes, possibly malformed; generated
// (1): the rest drives gen, which builds well-formed values of every type and nesting.

// fuzzValue decodes a fuzz input into a value.
func fuzzValue(b []byte) bsoncore.Value {
	if len(b) == 0 {
		return bsoncore.Value{}
	}
	if b[0]&1 == 0 {
		if len(b) < 2 {
			return bsoncore.Value{}
		}
		return bsoncore.Value{Type: bsoncore.Type(b[1]), Data: b[2:]}
	}
	return gen{&bytesEntropy{b: b[1:]}}.value(4)
}

// rawInput is the raw fuzz input for v.
func rawInput(v bsoncore.Value) []byte {
	return append([]byte{0, byte(v.Type)}, v.Data...)
}

// genInputs returns generated-mode fuzz inputs.
func genInputs(n int) [][]byte {
	r := rand.New(rand.NewPCG(5, 6))
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, 1+r.IntN(40))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		b[0] |= 1
		out[i] = b
	}
	return out
}

// FuzzKeyOrder checks the invariants of doc.go on two values.
func FuzzKeyOrder(f *testing.F) {
	for _, tc := range compareCases {
		f.Add(rawInput(tc.a), rawInput(tc.b))
	}
	in := genInputs(64)
	for i := 0; i+1 < len(in); i += 2 {
		f.Add(in[i], in[i+1])
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		va, vb := fuzzValue(a), fuzzValue(b)
		checkPair(t, newKeyed(va), newKeyed(vb))
		if IsNumber(va.Type) && IsNumber(vb.Type) && validValue(va) && validValue(vb) {
			if c, want := Compare(va, vb), oracleCompareNumbers(va, vb); c != want {
				t.Fatalf("Compare(%s, %s) = %d, the exact values say %d", show(va), show(vb), c, want)
			}
		}
		checkRoundTrip(t, va)
	})
}

// FuzzHashEqual checks that values MongoDB calls equal hash and encode identically: a value
// against a differently typed twin of it, and any pair that happens to compare equal.
func FuzzHashEqual(f *testing.F) {
	for _, tc := range compareCases {
		if tc.want == 0 {
			f.Add(rawInput(tc.a), rawInput(tc.b))
		}
	}
	in := genInputs(64)
	for i := 0; i+1 < len(in); i += 2 {
		f.Add(in[i], in[i+1])
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		va, vb := fuzzValue(a), fuzzValue(b)
		if Compare(va, vb) == 0 && Hash(va) != Hash(vb) {
			t.Fatalf("equal values %s, %s hash differently", show(va), show(vb))
		}
		tw, ok := safeTwin(va, b)
		if !ok {
			return // malformed: no well-formed twin to build
		}
		if Compare(va, tw) != 0 {
			t.Fatalf("twin %s of %s does not compare equal", show(tw), show(va))
		}
		if Hash(va) != Hash(tw) || !bytes.Equal(AppendKey(nil, va), AppendKey(nil, tw)) {
			t.Fatalf("%s and its twin %s hash or encode differently", show(va), show(tw))
		}
	})
}

// validValue reports whether v is well-formed BSON, documents and arrays checked in depth.
func validValue(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		d, rem, ok := bsoncore.ReadDocument(v.Data)
		return ok && len(rem) == 0 && d.Validate() == nil
	}
	return v.Validate() == nil
}

// safeTwin is twin on a value that may be malformed, which the driver's accessors in twin
// panic on.
func safeTwin(v bsoncore.Value, choice []byte) (tw bsoncore.Value, ok bool) {
	if !validValue(v) {
		return v, false
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return twin(v, choice), true
}

// twin returns a value equal to v in MongoDB's order but spelled differently where possible:
// numbers in another numeric type, strings as symbols, documents and arrays with twinned
// elements. choice picks among the spellings.
func twin(v bsoncore.Value, choice []byte) bsoncore.Value {
	pick := 0
	if len(choice) > 0 {
		pick = int(choice[0])
	}
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return twinNumber(v, pick)
	case bsoncore.TypeString:
		return sym(v.StringValue())
	case bsoncore.TypeSymbol:
		return str(v.Symbol())
	case bsoncore.TypeEmbeddedDocument:
		elems, _ := v.Document().Elements()
		kv := make([]any, 0, 2*len(elems))
		for i, e := range elems {
			kv = append(kv, e.Key(), twin(e.Value(), choice[min(i+1, len(choice)):]))
		}
		return obj(kv...)
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		for i := range vals {
			vals[i] = twin(vals[i], choice[min(i+1, len(choice)):])
		}
		return arr(vals...)
	}
	return v
}

// twinNumber returns a number of another type with exactly the value of v, or v itself.
func twinNumber(v bsoncore.Value, pick int) bsoncore.Value {
	var candidates []bsoncore.Value
	if i, ok := NumberAsInt64(v); ok {
		candidates = append(candidates, i64(i), d128(strconv.FormatInt(i, 10)+".00"), d128(strconv.FormatInt(i, 10)+"E+0"))
		if float64(i) == float64(int64(float64(i))) && int64(float64(i)) == i {
			candidates = append(candidates, f64(float64(i)))
		}
		if i >= math.MinInt32 && i <= math.MaxInt32 {
			candidates = append(candidates, i32(int32(i)))
		}
	}
	if f, ok := NumberAsFloat64(v); ok {
		switch {
		case math.IsNaN(f):
			candidates = append(candidates, f64(math.NaN()), d128("NaN"), d128("-NaN"))
		case math.IsInf(f, 0):
			inf := "Infinity"
			if f < 0 {
				inf = "-Infinity"
			}
			candidates = append(candidates, d128(inf))
		case f == 0:
			candidates = append(candidates, f64(math.Copysign(0, -1)), d128("-0E+12"))
		default:
			// The 34-digit form of a double is exact when the double has at most 34 digits.
			candidates = append(candidates, d128(strconv.FormatFloat(f, 'e', 33, 64)), f64(f))
		}
	}
	for n := range candidates {
		c := candidates[(pick+n)%len(candidates)]
		if oracleCompareNumbers(c, v) == 0 {
			return c
		}
	}
	return v
}

// FuzzDecodeKey checks that KeyLen and DecodeKey never panic on arbitrary bytes, agree on the
// length of what they accept, and that what they decode re-encodes to a key that decodes to an
// equal value.
func FuzzDecodeKey(f *testing.F) {
	for _, tc := range compareCases {
		f.Add(AppendKey(nil, tc.a))
		f.Add(AppendKeyDesc(nil, tc.b))
	}
	for _, tc := range goldenCases {
		f.Add(AppendKey(nil, tc.v))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, desc := range []bool{false, true} {
			keyLen, decode, key := KeyLen, DecodeKey, AppendKey
			if desc {
				keyLen, decode, key = KeyLenDesc, DecodeKeyDesc, AppendKeyDesc
			}
			n, lenOK := keyLen(src)
			v, rem, ok := decode(src)
			if !ok {
				continue
			}
			if !lenOK || n != len(src)-len(rem) || !bytes.Equal(rem, src[n:]) {
				t.Fatalf("desc=%v: DecodeKey consumed %d bytes, KeyLen says %d, %v", desc, len(src)-len(rem), n, lenOK)
			}
			if err := v.Validate(); err != nil {
				t.Fatalf("desc=%v: DecodeKey(%x) built invalid BSON: %v", desc, src, err)
			}
			k := key(nil, v)
			v2, rem2, ok := decode(k)
			if !ok || len(rem2) != 0 || Compare(v, v2) != 0 {
				t.Fatalf("desc=%v: %s re-encoded as %x decodes to %s", desc, show(v), k, show(v2))
			}
		}
	})
}
