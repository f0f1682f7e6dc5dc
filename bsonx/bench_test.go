package bsonx

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// benchValues are the values the key and hash benchmarks encode: the common _id and shard-key
// shapes first.
var benchValues = []struct {
	name string
	v    bsoncore.Value
}{
	{"Int32", i32(42)},
	{"Int64", i64(1700000000123)},
	{"Double", f64(19.99)},
	{"Decimal", d128("19.99")},
	{"ObjectID", oid(oidA)},
	{"ShortString", str("user-42")},
	{"SmallDoc", obj("_id", oid(oidA), "name", str("ann"), "age", i32(31), "tags", arr(str("x"), str("y")))},
}

// BenchmarkCompare measures Compare on pairs from compareCases.
func BenchmarkCompare(b *testing.B) {
	for _, name := range []string{
		"Int32EqualsDouble", "Int64AboveDoubleBelowIt", "DecimalTenthBelowDoubleTenth",
		"DecimalVsDecimalDigits", "StringPrefixFirst", "ObjectIDBytes", "ObjectNumbersEqual", "ArrayElements",
	} {
		tc := findCase(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Compare(tc.a, tc.b)
			}
		})
	}
}

// findCase returns the compareCases entry with the given name.
func findCase(b *testing.B, name string) compareCase {
	for _, tc := range compareCases {
		if tc.name == name {
			return tc
		}
	}
	b.Fatalf("no compare case %s", name)
	return compareCase{}
}

// BenchmarkEqual measures Equal on two equal short strings.
func BenchmarkEqual(b *testing.B) {
	x, y := str("user-42"), str("user-42")
	b.ReportAllocs()
	for b.Loop() {
		Equal(x, y)
	}
}

// BenchmarkAppendKey measures encoding into a buffer with room: the _id shapes first.
func BenchmarkAppendKey(b *testing.B) {
	buf := make([]byte, 0, 256)
	for _, bv := range benchValues {
		b.Run(bv.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendKey(buf[:0], bv.v)
			}
		})
	}
}

// BenchmarkDecodeKey measures decoding a key back into a value.
func BenchmarkDecodeKey(b *testing.B) {
	for _, bv := range benchValues {
		key := AppendKey(nil, bv.v)
		b.Run(bv.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				DecodeKey(key)
			}
		})
	}
}

// BenchmarkKeyLen measures finding the end of an encoded small document.
func BenchmarkKeyLen(b *testing.B) {
	key := AppendKey(nil, benchValues[len(benchValues)-1].v)
	b.ReportAllocs()
	for b.Loop() {
		KeyLen(key)
	}
}

// BenchmarkHash measures the shard-placement hash.
func BenchmarkHash(b *testing.B) {
	for _, bv := range benchValues {
		b.Run(bv.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Hash(bv.v)
			}
		})
	}
}

// benchDoc is a typical document for the path, sort and index benchmarks.
func benchDoc(b *testing.B) bsoncore.Document {
	return ej(b, `{"_id": {"$oid": "5099803df3f4948bd2f98391"}, "deviceId": "dev-17", "ts": 1700000000,
		"reading": {"temp": 21.5, "unit": "C"}, "tags": ["a", "b", "c"],
		"items": [{"sku": "x1", "qty": 2}, {"sku": "x2", "qty": 5}, {"sku": "x3", "qty": 1}]}`)
}

// BenchmarkWalkPath measures the matcher traversal on plain, nested, array and missing paths.
func BenchmarkWalkPath(b *testing.B) {
	doc := benchDoc(b)
	for _, path := range []string{"deviceId", "reading.temp", "tags", "items.qty", "missing.field"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			fn := func(PathMatch) bool { n++; return true }
			for b.Loop() {
				WalkPath(doc, path, fn)
			}
		})
	}
}

// BenchmarkLookup measures a plain nested lookup.
func BenchmarkLookup(b *testing.B) {
	doc := benchDoc(b)
	b.ReportAllocs()
	for b.Loop() {
		Lookup(doc, "reading.temp")
	}
}

// BenchmarkAppendSortKey measures sort keys with and without arrays on the path.
func BenchmarkAppendSortKey(b *testing.B) {
	doc := benchDoc(b)
	buf := make([]byte, 0, 128)
	for _, tc := range []struct {
		name string
		spec []SortField
	}{
		{"Scalar", []SortField{{Path: "ts", Desc: true}}},
		{"Compound", []SortField{{Path: "deviceId"}, {Path: "reading.temp", Desc: true}}},
		{"Array", []SortField{{Path: "items.qty"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendSortKey(buf[:0], doc, tc.spec)
			}
		})
	}
}

// BenchmarkAppendIndexKeys measures index key generation: plain, multikey and hashed.
func BenchmarkAppendIndexKeys(b *testing.B) {
	doc := benchDoc(b)
	for _, tc := range []struct {
		name   string
		fields []IndexField
	}{
		{"Scalar", []IndexField{{Path: "deviceId"}, {Path: "ts", Desc: true}}},
		{"Multikey", []IndexField{{Path: "items.sku"}, {Path: "items.qty"}}},
		{"Hashed", []IndexField{{Path: "deviceId", Hashed: true}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			fn := func([]byte) error { return nil }
			for b.Loop() {
				if _, err := AppendIndexKeys(doc, tc.fields, fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompareDecimal measures Compare of decimals with each other and with the other
// numeric types: the common case (small coefficients), a 34-digit quotient, and decimals
// far from the double range.
func BenchmarkCompareDecimal(b *testing.B) {
	for _, bc := range []struct {
		name string
		a, b bsoncore.Value
	}{
		{"DecimalSameScale", d128("19.99"), d128("20.49")},
		{"DecimalOtherScale", d128("19.990"), d128("2E+1")},
		{"Decimal34Digits", d128("0.3333333333333333333333333333333333"), d128("0.3333333333333333333333333333333334")},
		{"DecimalVsDouble", d128("0.1"), f64(0.1)},
		{"DecimalVsInt64", d128("1700000000123.5"), i64(1700000000123)},
		{"Decimal34DigitsVsDouble", d128("0.3333333333333333333333333333333333"), f64(1.0 / 3)},
		{"DecimalHugeVsDouble", d128("1.5E+400"), f64(1e300)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Compare(bc.a, bc.b)
			}
		})
	}
}

// BenchmarkAppendKeyDecimal measures the key encoding of decimals.
func BenchmarkAppendKeyDecimal(b *testing.B) {
	for _, bc := range []struct {
		name string
		v    bsoncore.Value
	}{
		{"Price", d128("19.99")},
		{"Integral", d128("42")},
		{"34Digits", d128("0.3333333333333333333333333333333333")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendKey(buf[:0], bc.v)
			}
		})
	}
}
