package bsonx

import (
	"bytes"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// compareCase is a pair of values and the sign of Compare(a, b) in MongoDB's order.
type compareCase struct {
	name string
	a, b bsoncore.Value
	want int
}

// ObjectIds used by the test tables.
const (
	oidA = "5099803df3f4948bd2f98391"
	oidB = "5099803df3f4948bd2f98392"
)

// compareCases feeds TestCompare, TestAppendKeyOrder, TestHashEqual, the benchmarks and the
// fuzz seeds. The type order and the number rules come from MongoDB's canonicalizeBSONType
// (bsontypes.h) and compareElementValues (bsonelement.cpp, bson_comparator_interface_base.h).
var compareCases = []compareCase{
	// Canonical type order, each rank against the next.
	{"MinKeyBelowUndefined", minKey(), undef(), -1},
	{"UndefinedBelowNull", undef(), null(), -1},
	{"NullBelowNumbers", null(), f64(math.NaN()), -1},
	{"NumbersBelowString", f64(math.Inf(1)), str(""), -1},
	{"StringBelowObject", str("zzz"), obj(), -1},
	{"ObjectBelowArray", obj("a", maxKey()), arr(), -1},
	{"ArrayBelowBinData", arr(maxKey()), bin(0, ""), -1},
	{"BinDataBelowObjectID", bin(0x80, "zzzz"), oid(oidA), -1},
	{"ObjectIDBelowBool", oid("ffffffffffffffffffffffff"), boolean(false), -1},
	{"BoolBelowDate", boolean(true), date(math.MinInt64), -1},
	{"DateBelowTimestamp", date(math.MaxInt64), ts(0, 0), -1},
	{"TimestampBelowRegex", ts(math.MaxUint32, math.MaxUint32), regex("", ""), -1},
	{"RegexBelowDBPointer", regex("z", "z"), dbptr("", oidA), -1},
	{"DBPointerBelowCode", dbptr("zzz", oidA), code(""), -1},
	{"CodeBelowCodeWithScope", code("zzz"), cws("", obj()), -1},
	{"CodeWithScopeBelowMaxKey", cws("zzz", obj("a", i32(1))), maxKey(), -1},
	{"MinKeyBelowNull", minKey(), null(), -1},
	{"EOOEqualsUndefined", bsoncore.Value{}, undef(), 0},
	{"NullEqualsNull", null(), null(), 0},
	{"MaxKeyEqualsMaxKey", maxKey(), maxKey(), 0},

	// Numbers compare by value across types.
	{"Int32EqualsDouble", i32(1), f64(1.0), 0},
	{"Int32EqualsInt64", i32(1), i64(1), 0},
	{"Int64EqualsDecimal", i64(1), d128("1.0"), 0},
	{"DecimalTrailingZeros", d128("1"), d128("1.000"), 0},
	{"DecimalExponentForms", d128("1E+2"), d128("100"), 0},
	{"DecimalEqualsDoubleHalf", d128("0.5"), f64(0.5), 0},
	{"DecimalBelowNearestDouble", d128("1E+27"), f64(1e27), -1}, // the double 1e27 is 1000000000000000013287555072
	{"DecimalEqualsExactDouble", d128("1000000000000000013287555072"), f64(1e27), 0},
	{"NegativeZeroEqualsZero", f64(math.Copysign(0, -1)), i32(0), 0},
	{"DecimalNegativeZero", d128("-0"), f64(0), 0},
	{"DecimalZeroExponent", d128("0E+10"), i64(0), 0},
	{"NaNEqualsNaN", f64(math.NaN()), f64(math.NaN()), 0},
	{"DecimalNaNEqualsDoubleNaN", d128("NaN"), f64(math.NaN()), 0},
	{"NaNBelowNegInf", f64(math.NaN()), f64(math.Inf(-1)), -1},
	{"NaNBelowNumbers", f64(math.NaN()), i64(math.MinInt64), -1},
	{"DecimalNaNBelowDecimalNegInf", d128("NaN"), d128("-Inf"), -1},
	{"NegInfEqualsDecimalNegInf", f64(math.Inf(-1)), d128("-Infinity"), 0},
	{"PosInfEqualsDecimalInf", f64(math.Inf(1)), d128("Infinity"), 0},
	{"NegInfBelowMinInt64", f64(math.Inf(-1)), i64(math.MinInt64), -1},
	{"MaxInt64BelowTwoTo63", i64(math.MaxInt64), f64(9.223372036854775807e18), -1},
	{"MinInt64EqualsDouble", i64(math.MinInt64), f64(-0x1p63), 0},
	{"Int64AboveDoubleBelowIt", i64(1<<53 + 1), f64(1 << 53), 1},
	{"Int64BelowNextDouble", i64(1<<53 + 1), f64(1<<53 + 2), -1},
	{"Int64EqualsBigDouble", i64(1 << 62), f64(0x1p62), 0},
	{"Int64BetweenDoubles", i64(math.MaxInt64 - 1000), f64(9.2233720368547748e18), 1},
	{"DoubleFractionVsInt", f64(2.5), i32(2), 1},
	{"NegativeOrder", i32(-3), f64(-2.5), -1},
	{"DecimalTenthBelowDoubleTenth", d128("0.1"), f64(0.1), -1},
	{"Decimal34DigitsBelowDoubleTenth", d128("0.1000000000000000055511151231257827"), f64(0.1), -1},
	{"Decimal34DigitsAboveDoubleTenth", d128("0.1000000000000000055511151231257828"), f64(0.1), 1},
	{"NegDecimalTenthAboveNegDouble", d128("-0.1"), f64(-0.1), 1},
	{"DecimalAboveMaxDouble", d128("1E+400"), f64(math.MaxFloat64), 1},
	{"DecimalBelowInf", d128("9.999999999999999999999999999999999E+6144"), f64(math.Inf(1)), -1},
	{"NegDecimalAboveNegInf", d128("-1E+400"), f64(math.Inf(-1)), 1},
	{"TinyDecimalAboveZero", d128("1E-400"), i32(0), 1},
	{"TinyDecimalBelowSubnormal", d128("1E-400"), f64(5e-324), -1},
	{"DecimalAboveSubnormal", d128("4.9406564584124655E-324"), f64(5e-324), 1},
	{"DecimalBelowSubnormal", d128("4.9406564584124654E-324"), f64(5e-324), -1},
	{"DecimalVsInt64Big", d128("9223372036854775807"), i64(math.MaxInt64), 0},
	{"DecimalAboveInt64Max", d128("9223372036854775807.5"), i64(math.MaxInt64), 1},
	{"DecimalVsDecimalDigits", d128("12345678901234567890123456789012.34"), d128("12345678901234567890123456789012.35"), -1},
	{"DecimalVsDecimalScale", d128("2E+3"), d128("1999.999999"), 1},
	{"DecimalNegativeVsNegative", d128("-1.5"), d128("-1.25"), -1},
	{"DecimalNonCanonicalIsZero", decWordsValue(0x3040000000000000|0x1ed09bead87c0, 0x378d8e6400000000), i32(0), 0},

	// Strings and symbols compare by bytes, shorter first.
	{"StringBytes", str("a"), str("b"), -1},
	{"StringPrefixFirst", str("a"), str("ab"), -1},
	{"StringEmptyFirst", str(""), str("a"), -1},
	{"StringEmbeddedNul", str("a"), str("a\x00"), -1},
	{"StringNulBelowByte", str("a\x00"), str("a\x01"), -1},
	{"StringNulVsPrefix", str("a\x00b"), str("a"), 1},
	{"StringUTF8Bytes", str("é"), str("z"), 1},
	{"StringCaseSensitive", str("B"), str("a"), -1},
	{"StringEqualsSymbol", str("abc"), sym("abc"), 0},
	{"SymbolBelowString", sym("abc"), str("abd"), -1},

	// Objects: element by element, type rank, then field name, then value.
	{"ObjectValue", obj("a", i32(1)), obj("a", i32(2)), -1},
	{"ObjectFieldName", obj("a", i32(9)), obj("b", i32(0)), -1},
	{"ObjectRankBeforeName", obj("b", i32(1)), obj("a", str("x")), -1},
	{"ObjectNameBeforeValue", obj("a", boolean(true)), obj("b", boolean(false)), -1},
	{"ObjectNameBeforeNumber", obj("a", i32(5)), obj("b", i32(1)), -1},
	{"ObjectFewerFirst", obj("a", i32(1)), obj("a", i32(1), "b", minKey()), -1},
	{"ObjectEmptyFirst", obj(), obj("a", minKey()), -1},
	{"ObjectNumbersEqual", obj("a", i32(1), "b", f64(2)), obj("a", d128("1.0"), "b", i64(2)), 0},
	{"ObjectFieldOrderMatters", obj("a", i32(1), "b", i32(2)), obj("b", i32(2), "a", i32(1)), -1},
	{"ObjectNameByBytes", obj("a", i32(1)), obj("aa", i32(1)), -1},
	{"ObjectNested", obj("a", obj("b", i32(1))), obj("a", obj("b", i32(1), "c", i32(0))), -1},
	{"ObjectMinKeyVsNull", obj("a", minKey()), obj("a", null()), -1},

	// Arrays: element by element, shorter first.
	{"ArrayElements", arr(i32(1), i32(2)), arr(i32(1), i32(3)), -1},
	{"ArrayShorterFirst", arr(i32(1)), arr(i32(1), i32(2)), -1},
	{"ArrayEmptyFirst", arr(), arr(minKey()), -1},
	{"ArrayFirstElementDecides", arr(i32(2)), arr(i32(1), i32(5)), 1},
	{"ArrayNested", arr(arr(i32(1))), arr(i32(1)), 1},
	{"ArrayNumbersEqual", arr(i32(1), f64(2.5)), arr(d128("1"), d128("2.50")), 0},

	// binData: length, then subtype, then bytes.
	{"BinDataShorterFirst", bin(5, "a"), bin(0, "ab"), -1},
	{"BinDataSubtype", bin(0, "ab"), bin(4, "aa"), -1},
	{"BinDataBytes", bin(0, "ab"), bin(0, "ac"), -1},
	{"BinDataEqual", bin(4, "\x00\x01"), bin(4, "\x00\x01"), 0},

	// The scalar types with one natural order.
	{"ObjectIDBytes", oid(oidA), oid(oidB), -1},
	{"BoolFalseFirst", boolean(false), boolean(true), -1},
	{"DateSigned", date(-1), date(0), -1},
	{"DateMillis", date(1700000000000), date(1700000000001), -1},
	{"TimestampUnsigned", ts(1, 0), ts(1<<31+1, 0), -1},
	{"TimestampIncrement", ts(5, 1), ts(5, 2), -1},
	{"TimestampTimeFirst", ts(5, math.MaxUint32), ts(6, 0), -1},
	{"RegexPatternFirst", regex("a", "z"), regex("b", "a"), -1},
	{"RegexOptions", regex("a", "i"), regex("a", "m"), -1},
	{"RegexPrefix", regex("a", ""), regex("ab", ""), -1},
	{"DBPointerShorterNamespaceFirst", dbptr("zz", oidB), dbptr("aaa", oidA), -1},
	{"DBPointerNamespace", dbptr("db.a", oidB), dbptr("db.b", oidA), -1},
	{"DBPointerObjectID", dbptr("db.a", oidA), dbptr("db.a", oidB), -1},
	{"CodeBytes", code("function(){ }"), code("function(){}"), -1},
	{"CodeWithScopeCodeFirst", cws("a", obj("z", i32(1))), cws("b", obj()), -1},
	{"CodeWithScopeScope", cws("a", obj("x", i32(1))), cws("a", obj("x", f64(1.5))), -1},
	{"CodeWithScopeScopeEqual", cws("a", obj("x", i32(1))), cws("a", obj("x", f64(1))), 0},
}

// TestCompare checks Compare, Equal and CompareDocuments on compareCases, both ways round,
// and that the numeric cases agree with the exact big.Rat oracle.
func TestCompare(t *testing.T) {
	for _, tc := range compareCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compare(tc.a, tc.b); got != tc.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", show(tc.a), show(tc.b), got, tc.want)
			}
			if got := Compare(tc.b, tc.a); got != -tc.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", show(tc.b), show(tc.a), got, -tc.want)
			}
			if got := Equal(tc.a, tc.b); got != (tc.want == 0) {
				t.Errorf("Equal = %v, want %v", got, tc.want == 0)
			}
			if IsNumber(tc.a.Type) && IsNumber(tc.b.Type) {
				if got := oracleCompareNumbers(tc.a, tc.b); got != tc.want {
					t.Errorf("the big.Rat oracle says %d: the case is wrong", got)
				}
			}
			if tc.a.Type == bsoncore.TypeEmbeddedDocument && tc.b.Type == bsoncore.TypeEmbeddedDocument {
				if got := CompareDocuments(tc.a.Data, tc.b.Data); got != tc.want {
					t.Errorf("CompareDocuments = %d, want %d", got, tc.want)
				}
			}
		})
	}
}

// TestAppendKeyOrder checks that ascending, descending and compound keys order as Compare
// does on compareCases, and that every key round-trips.
func TestAppendKeyOrder(t *testing.T) {
	for _, tc := range compareCases {
		t.Run(tc.name, func(t *testing.T) {
			ka, kb := AppendKey(nil, tc.a), AppendKey(nil, tc.b)
			if got := sign(bytes.Compare(ka, kb)); got != tc.want {
				t.Errorf("ascending keys compare %d, want %d\n%x\n%x", got, tc.want, ka, kb)
			}
			da, db := AppendKeyDesc(nil, tc.a), AppendKeyDesc(nil, tc.b)
			if got := sign(bytes.Compare(da, db)); got != -tc.want {
				t.Errorf("descending keys compare %d, want %d\n%x\n%x", got, -tc.want, da, db)
			}
			// Compound keys: the components stay separated, whatever follows them.
			ca := AppendKey(AppendKey(nil, tc.a), maxKey())
			cb := AppendKey(AppendKey(nil, tc.b), minKey())
			if tc.want != 0 && sign(bytes.Compare(ca, cb)) != tc.want {
				t.Errorf("compound keys compare %d, want %d", sign(bytes.Compare(ca, cb)), tc.want)
			}
			for _, v := range []bsoncore.Value{tc.a, tc.b} {
				checkRoundTrip(t, v)
			}
		})
	}
}

// TestHashEqual checks that the equal pairs of compareCases hash and encode identically.
func TestHashEqual(t *testing.T) {
	for _, tc := range compareCases {
		if tc.want != 0 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			if Hash(tc.a) != Hash(tc.b) {
				t.Errorf("Hash(%s) != Hash(%s)", show(tc.a), show(tc.b))
			}
			if !bytes.Equal(AppendKey(nil, tc.a), AppendKey(nil, tc.b)) {
				t.Errorf("equal values encode differently")
			}
		})
	}
}

// checkRoundTrip checks KeyLen and DecodeKey, ascending and descending, on the key of v.
func checkRoundTrip(t *testing.T, v bsoncore.Value) {
	t.Helper()
	for _, desc := range []bool{false, true} {
		key, keyLen, decode := AppendKey, KeyLen, DecodeKey
		if desc {
			key, keyLen, decode = AppendKeyDesc, KeyLenDesc, DecodeKeyDesc
		}
		k := key(nil, v)
		withTail := append(append([]byte(nil), k...), 0xAB, 0xCD)
		if n, ok := keyLen(withTail); !ok || n != len(k) {
			t.Errorf("desc=%v: KeyLen(%x…) = %d, %v; want %d", desc, k, n, ok, len(k))
		}
		if CanonicalRank(v.Type) == rankUnknown {
			continue // not BSON: measured, never decoded
		}
		got, rem, ok := decode(withTail)
		if !ok || !bytes.Equal(rem, []byte{0xAB, 0xCD}) {
			t.Errorf("desc=%v: DecodeKey(%x) failed (ok=%v, rem=%x)", desc, k, ok, rem)
			continue
		}
		if err := got.Validate(); err != nil {
			t.Errorf("desc=%v: DecodeKey(%x) built invalid BSON: %v", desc, k, err)
		}
		if Compare(got, v) != 0 {
			t.Errorf("desc=%v: DecodeKey gave %s for %s", desc, show(got), show(v))
		}
		if k2 := key(nil, got); !bytes.Equal(k, k2) {
			t.Errorf("desc=%v: re-encoding %s gave %x, want %x", desc, show(got), k2, k)
		}
	}
}

// TestCanonicalRank checks every type byte against canonicalizeBSONType.
func TestCanonicalRank(t *testing.T) {
	// MongoDB's canonicalizeBSONType, src/mongo/bson/bsontypes.h.
	want := map[bsoncore.Type]int{
		bsoncore.TypeMinKey: -1, 0: 0, bsoncore.TypeUndefined: 0, bsoncore.TypeNull: 5,
		bsoncore.TypeDouble: 10, bsoncore.TypeInt32: 10, bsoncore.TypeInt64: 10, bsoncore.TypeDecimal128: 10,
		bsoncore.TypeString: 15, bsoncore.TypeSymbol: 15, bsoncore.TypeEmbeddedDocument: 20,
		bsoncore.TypeArray: 25, bsoncore.TypeBinary: 30, bsoncore.TypeObjectID: 35,
		bsoncore.TypeBoolean: 40, bsoncore.TypeDateTime: 45, bsoncore.TypeTimestamp: 47,
		bsoncore.TypeRegex: 50, bsoncore.TypeDBPointer: 55, bsoncore.TypeJavaScript: 60,
		bsoncore.TypeCodeWithScope: 65, bsoncore.TypeMaxKey: 127,
	}
	for i := range 256 {
		typ := bsoncore.Type(i)
		w, known := want[typ]
		if !known {
			w = 128
		}
		if got := CanonicalRank(typ); got != w {
			t.Errorf("CanonicalRank(%#x) = %d, want %d", i, got, w)
		}
	}
}

// TestKeyLengths pins the size of the keys that every document key contains.
func TestKeyLengths(t *testing.T) {
	// _id keys are in every document key: keep the common ones short.
	for _, tc := range []struct {
		name string
		v    bsoncore.Value
		want int
	}{
		{"Zero", i32(0), 1},
		{"One", i32(1), 2},
		{"SmallInt", i32(100), 2},
		{"Byte", i64(255), 2},
		{"NineBits", i64(257), 3},
		{"Int32Max", i32(math.MaxInt32), 6},
		{"Int64Max", i64(math.MaxInt64), 10},
		{"ObjectID", oid(oidA), 13},
		{"ShortString", str("user42"), 9},
		{"Null", null(), 1},
		{"Bool", boolean(true), 1},
		{"Date", date(1700000000000), 9},
	} {
		if got := len(AppendKey(nil, tc.v)); got != tc.want {
			t.Errorf("%s: key of %s is %d bytes, want %d", tc.name, show(tc.v), got, tc.want)
		}
	}
}

// TestNumberHelpers checks IsNumber, NumberAsFloat64 and NumberAsInt64.
func TestNumberHelpers(t *testing.T) {
	for _, tc := range []struct {
		v      bsoncore.Value
		f      float64
		i      int64
		iOK    bool
		number bool
	}{
		{i32(-7), -7, -7, true, true},
		{i64(math.MaxInt64), 0x1p63, math.MaxInt64, true, true},
		{f64(2.5), 2.5, 0, false, true},
		{f64(-3), -3, -3, true, true},
		{f64(0x1p63), 0x1p63, 0, false, true},
		{f64(-0x1p63), -0x1p63, math.MinInt64, true, true},
		{d128("5.00"), 5, 5, true, true},
		{d128("-9223372036854775808"), -0x1p63, math.MinInt64, true, true},
		{d128("9223372036854775808"), 0x1p63, 0, false, true},
		{d128("0.1"), 0.1, 0, false, true},
		{d128("1E+400"), math.Inf(1), 0, false, true},
		{d128("123456789012345678901234567890.5"), 123456789012345678901234567890.5, 0, false, true},
		{d128("1.2E-10"), 1.2e-10, 0, false, true},
		{str("1"), 0, 0, false, false},
	} {
		if got := IsNumber(tc.v.Type); got != tc.number {
			t.Errorf("IsNumber(%s) = %v", show(tc.v), got)
		}
		f, ok := NumberAsFloat64(tc.v)
		if ok != tc.number || f != tc.f {
			t.Errorf("NumberAsFloat64(%s) = %v, %v; want %v", show(tc.v), f, ok, tc.f)
		}
		i, ok := NumberAsInt64(tc.v)
		if ok != tc.iOK || i != tc.i {
			t.Errorf("NumberAsInt64(%s) = %v, %v; want %v, %v", show(tc.v), i, ok, tc.i, tc.iOK)
		}
	}
	if f, _ := NumberAsFloat64(d128("NaN")); !math.IsNaN(f) {
		t.Errorf("NumberAsFloat64(NaN) = %v", f)
	}
}
