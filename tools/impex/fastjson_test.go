package impex

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// fastJSONCases feed the differential test, the fuzz seeds and the benchmarks: each is one
// line of an import, and fast says whether the fast scanner reads it (the others go to the
// driver).
var fastJSONCases = []struct {
	name string
	line string
	fast bool
}{
	{"Empty", `{}`, true},
	{"Scalars", `{"_id":1,"s":"x","b":true,"f":false,"n":null,"d":1.5}`, true},
	{"Spaces", " \t{ \"a\" : 1 , \"b\" :[ 1 , 2 ] }\r\n", true},
	{"Int32Edges", `{"a":2147483647,"b":-2147483648,"c":-0}`, true},
	{"Int64", `{"a":2147483648,"b":-2147483649,"c":9223372036854775807}`, true},
	{"IntPastInt64IsDouble", `{"a":92233720368547758070,"b":-92233720368547758070}`, true},
	{"Doubles", `{"a":0.1,"b":-0.0,"c":1e3,"d":1E-3,"e":2.5e+10,"f":1.0}`, true},
	{"DoubleOutOfRange", `{"a":1e400}`, false},
	{"Nested", `{"a":{"b":{"c":[1,{"d":"e"},[]]}},"e":[]}`, true},
	{"Escapes", `{"a":"q\"b\\s\/n\nt\tr\rb\bf\f"}`, true},
	{"UnicodeEscape", `{"a":"\u00e9"}`, false},
	{"UTF8", `{"é":"日本語","b":"ü"}`, true},
	{"InvalidUTF8", "{\"a\":\"\xff\"}", false},
	{"ControlByte", "{\"a\":\"\x01\"}", false},
	{"DuplicateKeys", `{"a":1,"a":"x"}`, true},
	{"EmptyKey", `{"":1}`, true},
	{"OID", `{"_id":{"$oid":"5f4af8ac1f2d495d12345678"}}`, true},
	{"OIDUpper", `{"_id":{"$oid":"5F4AF8AC1F2D495D12345678"}}`, true},
	{"OIDShort", `{"_id":{"$oid":"5f4af8"}}`, false},
	{"NumberLong", `{"a":{"$numberLong":"5"},"b":{"$numberLong":"-9223372036854775808"}}`, true},
	{"NumberLongBad", `{"a":{"$numberLong":"5x"}}`, false},
	{"DateString", `{"d":{"$date":"2024-01-02T03:04:05.123Z"},"e":{"$date":"2024-01-02T03:04:05Z"}}`, true},
	{"DateOffset", `{"d":{"$date":"2024-01-02T03:04:05.1+02:00"},"e":{"$date":"2024-01-02T03:04:05.999-0130"}}`, true},
	{"DateNumberLong", `{"d":{"$date":{"$numberLong":"-62135596800000"}}}`, true},
	{"DateNumber", `{"d":{"$date":1}}`, false},
	{"DateBad", `{"d":{"$date":"yesterday"}}`, false},
	{"WrapperExtraKey", `{"a":{"$oid":"5f4af8ac1f2d495d12345678","b":1}}`, false},
	{"Canonical", `{"a":{"$numberInt":"1"},"b":{"$numberDouble":"Infinity"}}`, false},
	{"OtherWrappers", `{"a":{"$numberDecimal":"1.5"},"b":{"$binary":{"base64":"AQ==","subType":"00"}}}`, false},
	{"DollarKey", `{"$set":1}`, false},
	{"LeadingZero", `{"a":01}`, false},
	{"BadNumber", `{"a":1.}`, false},
	{"BadLiteral", `{"a":tru}`, false},
	{"LiteralRunOn", `{"a":truex}`, false},
	{"Trailing", `{"a":1} x`, false},
	{"TwoDocs", `{"a":1}{"b":2}`, false},
	{"Unclosed", `{"a":1`, false},
	{"NotObject", `[1]`, false},
	{"TrailingComma", `{"a":1,}`, false},
	{"Telemetry", `{"_id":{"$oid":"65a1b2c3d4e5f60718293a4b"},"deviceId":"dev-0042","metricType":"temperature","metricValue":23.57,"unit":"C","readingTime":{"$date":"2026-01-01T00:00:42Z"},"tags":["a","b"],"loc":{"lat":47.1,"lon":-122.3},"n":{"$numberLong":"42"}}`, true},
}

// TestParseDocMatchesDriver checks that every case parses to the driver's bytes, or to the
// driver's error, and that the fast scanner takes exactly the cases it should.
func TestParseDocMatchesDriver(t *testing.T) {
	for _, tc := range fastJSONCases {
		t.Run(tc.name, func(t *testing.T) {
			_, fast := appendFastDoc(nil, []byte(tc.line))
			if fast != tc.fast {
				t.Errorf("fast scanner took it: %v, want %v", fast, tc.fast)
			}
			checkSameAsDriver(t, []byte(tc.line))
		})
	}
}

// TestParseDocDeepNesting checks nesting past the scanner's depth, which the driver reads.
func TestParseDocDeepNesting(t *testing.T) {
	line := `{"a":` + strings.Repeat(`[`, maxFastDepth+5) + strings.Repeat(`]`, maxFastDepth+5) + `}`
	if _, fast := appendFastDoc(nil, []byte(line)); fast {
		t.Error("the fast scanner read past its depth")
	}
	checkSameAsDriver(t, []byte(line))
}

// checkSameAsDriver fails unless parseDoc gives the driver's bytes for line, or fails as
// the driver does.
func checkSameAsDriver(t *testing.T, line []byte) {
	t.Helper()
	want, wantErr := appendDriverDoc(nil, line)
	prefix := []byte("prefix")
	got, err := parseDoc(append([]byte(nil), prefix...), line)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, the driver's %v", line, err, wantErr)
	}
	if err == nil && !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("%q:\n got %x\nwant %x", line, got[len(prefix):], want)
	}
	if fast, ok := appendFastDoc(nil, line); ok && !bytes.Equal(fast, want) {
		t.Fatalf("%q: fast scanner\n got %x\nwant %x", line, fast, want)
	}
}

// FuzzParseDoc checks parseDoc against bson.UnmarshalExtJSON on any input: the same bytes
// or the same failure. Run it with
// go test ./tools/impex -run '^$' -fuzz '^FuzzParseDoc$' -fuzztime 2m.
func FuzzParseDoc(f *testing.F) {
	for _, tc := range fastJSONCases {
		f.Add([]byte(tc.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkSameAsDriver(t, line)
	})
}

// BenchmarkParseDoc compares the fast scanner with the driver on the fast cases.
func BenchmarkParseDoc(b *testing.B) {
	for _, tc := range fastJSONCases {
		if !tc.fast || tc.name != "Telemetry" && tc.name != "Nested" && tc.name != "Scalars" {
			continue
		}
		line := []byte(tc.line)
		for _, p := range []struct {
			name  string
			parse func(dst, src []byte) ([]byte, error)
		}{{"Fast", parseDoc}, {"Driver", appendDriverDoc}} {
			b.Run(fmt.Sprintf("%s/%s", tc.name, p.name), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(line)))
				var buf []byte
				for b.Loop() {
					var err error
					if buf, err = p.parse(buf[:0], line); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestParseDocRandomRelaxed checks parseDoc against the driver on random documents of every
// type the scanner knows and some it does not, printed as relaxed Extended JSON by the
// driver (as `cleave export` and mongoexport print them): shapes a byte-mutating fuzzer
// rarely builds. A good part must take the fast path, or the test proves little.
func TestParseDocRandomRelaxed(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fast := 0
	const n = 3000
	for range n {
		d := randomDoc(r, 0)
		for _, escapeHTML := range []bool{false, true} {
			line, err := bson.MarshalExtJSON(d, false, escapeHTML)
			if err != nil {
				t.Fatal(err)
			}
			checkSameAsDriver(t, line)
			if _, ok := appendFastDoc(nil, line); ok && !escapeHTML {
				fast++
			}
		}
	}
	t.Logf("%d of %d random documents took the fast path", fast, n)
	if fast < n/4 {
		t.Errorf("only %d of %d random documents took the fast path", fast, n)
	}
}

// randomDoc builds a document of a few random fields, nested up to depth 3.
func randomDoc(r *rand.Rand, depth int) bson.D {
	d := bson.D{}
	for i := range r.IntN(6) {
		d = append(d, bson.E{Key: randomString(r, i), Value: randomValue(r, depth)})
	}
	return d
}

// randomValue is a value of a random type, mostly those the fast scanner reads.
func randomValue(r *rand.Rand, depth int) any {
	ints := []int64{0, 1, -1, math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MinInt32 - 1, math.MaxInt64, math.MinInt64}
	floats := []float64{0, math.Copysign(0, -1), 0.1, 1, 1e21, 1e-7, 123456789.123, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.NaN()}
	switch k := r.IntN(14); {
	case k == 0:
		return int32(ints[r.IntN(len(ints))])
	case k == 1:
		return ints[r.IntN(len(ints))]
	case k == 2:
		return floats[r.IntN(len(floats))]
	case k == 3:
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
	case k == 4:
		return randomString(r, r.IntN(20))
	case k == 5:
		return r.IntN(2) == 0
	case k == 6:
		return nil
	case k == 7:
		var id bson.ObjectID
		for i := range id {
			id[i] = byte(r.IntN(256))
		}
		return id
	case k == 8:
		ms := []int64{0, 1704164645123, -1, 253402300799999, 253402300800000, r.Int64N(1 << 45), -r.Int64N(1 << 40)}
		return bson.DateTime(ms[r.IntN(len(ms))])
	case k == 9 && depth < 3:
		return randomDoc(r, depth+1)
	case k == 10 && depth < 3:
		a := bson.A{}
		for range r.IntN(5) {
			a = append(a, randomValue(r, depth+1))
		}
		return a
	case k == 11:
		return bson.Binary{Subtype: byte(r.IntN(5)), Data: []byte(randomString(r, 3))}
	case k == 12:
		return bson.Timestamp{T: r.Uint32(), I: r.Uint32()}
	}
	return int32(r.Int32())
}

// randomString is a string of n runes, some of which need escaping in JSON.
func randomString(r *rand.Rand, n int) string {
	runes := []rune{'a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', '\x01', '\x7f', 'é', '日', '\u2028', '😀', '<', '&', '$', '.'}
	var b strings.Builder
	for range n {
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}
