package bsonx

import (
	"encoding/hex"
	"math"
	"math/big"
	"strconv"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Constructors for test values.

// i32 returns an int32 value.
func i32(v int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, v)}
}

// i64 returns an int64 value.
func i64(v int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, v)}
}

// f64 returns a double value.
func f64(v float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, v)}
}

// d128 parses a decimal128 literal ("1.0", "-Inf", "NaN", "1E+400").
func d128(s string) bsoncore.Value {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	h, l := d.GetBytes()
	return decWordsValue(h, l)
}

// decWordsValue returns the decimal128 value with the given high and low words.
func decWordsValue(h, l uint64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
}

// str returns a string value.
func str(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

// sym returns a symbol value.
func sym(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeSymbol, Data: bsoncore.AppendSymbol(nil, s)}
}

// code returns a javascript value.
func code(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeJavaScript, Data: bsoncore.AppendJavaScript(nil, s)}
}

// oid returns the ObjectId with the given hex.
func oid(h string) bsoncore.Value {
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 12 {
		panic("bad oid " + h)
	}
	return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: b}
}

// boolean returns a bool value.
func boolean(b bool) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
}

// date returns a date value, in milliseconds since the epoch.
func date(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}

// ts returns a timestamp value.
func ts(t, i uint32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, t, i)}
}

// bin returns a binData value.
func bin(sub byte, b string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, sub, []byte(b))}
}

// regex returns a regular expression value.
func regex(p, o string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, p, o)}
}

// dbptr returns a dbPointer value.
func dbptr(ns, id string) bsoncore.Value {
	o := oid(id)
	return bsoncore.Value{Type: bsoncore.TypeDBPointer, Data: bsoncore.AppendDBPointer(nil, ns, [12]byte(o.Data))}
}

// cws returns a javascriptWithScope value.
func cws(c string, scope bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeCodeWithScope, Data: bsoncore.AppendCodeWithScope(nil, c, scope.Data)}
}

// null, undef, minKey and maxKey return the values of the types without data.
func null() bsoncore.Value   { return bsoncore.Value{Type: bsoncore.TypeNull} }
func undef() bsoncore.Value  { return bsoncore.Value{Type: bsoncore.TypeUndefined} }
func minKey() bsoncore.Value { return bsoncore.Value{Type: bsoncore.TypeMinKey} }
func maxKey() bsoncore.Value { return bsoncore.Value{Type: bsoncore.TypeMaxKey} }

// obj builds an embedded document from alternating keys and values.
func obj(kv ...any) bsoncore.Value {
	idx, b := bsoncore.AppendDocumentStart(nil)
	for i := 0; i < len(kv); i += 2 {
		b = bsoncore.AppendValueElement(b, kv[i].(string), kv[i+1].(bsoncore.Value))
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b}
}

// arr builds an array.
func arr(vs ...bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.BuildArray(nil, vs...)}
}

// ej parses relaxed Extended JSON into a document.
func ej(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		t.Fatalf("bad extended JSON %s: %v", s, err)
	}
	return bsoncore.Document(raw)
}

// show renders a value for failure messages.
func show(v bsoncore.Value) string {
	if v.Type == bsoncore.TypeDecimal128 && len(v.Data) == 16 {
		h, l := readDecimalWords(v.Data)
		return "NumberDecimal(" + bson.NewDecimal128(h, l).String() + ")"
	}
	if s, ok := safeString(v); ok {
		return s
	}
	return "type " + strconv.Itoa(int(v.Type)) + " " + hex.EncodeToString(v.Data)
}

// safeString calls v.String, which may panic on malformed values.
func safeString(v bsoncore.Value) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return v.Type.String() + " " + v.String(), true
}

// sign maps an int to -1, 0 or 1.
func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// exactRat returns a finite number's exact value; class is -2 for NaN, -1 for -Inf, 1 for +Inf
// and 0 for finite numbers. It is the test oracle for numeric comparisons.
func exactRat(v bsoncore.Value) (r *big.Rat, class int) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return new(big.Rat).SetInt64(int64(v.Int32())), 0
	case bsoncore.TypeInt64:
		return new(big.Rat).SetInt64(v.Int64()), 0
	case bsoncore.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			return nil, -2
		case math.IsInf(f, 1):
			return nil, 1
		case math.IsInf(f, -1):
			return nil, -1
		}
		return new(big.Rat).SetFloat64(f), 0
	}
	h, l := v.Decimal128()
	d := bson.NewDecimal128(h, l)
	if d.IsNaN() {
		return nil, -2
	}
	if inf := d.IsInf(); inf != 0 {
		return nil, inf
	}
	bi, exp, err := d.BigInt()
	if err != nil {
		panic(err)
	}
	if bi.CmpAbs(maxCoef) > 0 {
		return new(big.Rat), 0 // non-canonical coefficient: zero, as IEEE 754-2008 says
	}
	r = new(big.Rat).SetInt(bi)
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(exp, -exp))), nil))
	if exp >= 0 {
		return r.Mul(r, p), 0
	}
	return r.Quo(r, p), 0
}

// maxCoef is 10^34-1, the largest canonical decimal128 coefficient.
var maxCoef = new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(34), nil), big.NewInt(1))

// oracleCompareNumbers compares two numbers exactly through big.Rat.
func oracleCompareNumbers(a, b bsoncore.Value) int {
	ra, ca := exactRat(a)
	rb, cb := exactRat(b)
	return cmpExact(ra, ca, rb, cb)
}

// cmpExact compares two results of exactRat.
func cmpExact(ra *big.Rat, ca int, rb *big.Rat, cb int) int {
	if ca != 0 || cb != 0 {
		rank := func(c int) int {
			if c == -2 {
				return -3
			}
			return c * 2
		}
		return sign(rank(ca) - rank(cb))
	}
	return ra.Cmp(rb)
}
