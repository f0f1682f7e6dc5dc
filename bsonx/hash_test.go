package bsonx

import (
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// goldenCases freeze Hash and AppendKey: documents are placed on partitions by Hash and index
// keys are stored in AppendKey's encoding, so neither may ever change for existing values.
// A failure here means data written by an earlier build would be misplaced or unreadable.
var goldenCases = []struct {
	name string
	v    bsoncore.Value
	hash uint64
	key  string // hex
}{
	{"Int32One", i32(1), 0x6daa6ff1e14b1a1, "4e00"},
	{"Int32Zero", i32(0), 0x77ead0d66864b856, "4c"},
	{"Int32Neg", i32(-42), 0x6215d4347e55bcbd, "45af"},
	{"Int64Max", i64(math.MaxInt64), 0x4ff98a94b727af3e, "8c ffffffffffffffff fc"},
	{"DoubleHalf", f64(0.5), 0xd5c800f3e73e5103, "4d7fff00"},
	{"DoubleTenth", f64(0.1), 0x5cfb1176f0f9cdd4, "4d 7ffc 99cd673399cd6740"},
	{"DecimalTenth", d128("0.1"), 0x93f5e930e8602c4b, "4d 7ffc 99cd673399cd673399 00 7fff 14"},
	{"StringEmpty", str(""), 0x2f8a7af7d9b96e5f, "900001"},
	{"String", str("deviceId-42"), 0x6ea529dbc33de31d, "906465766963654964 2d34320001"},
	{"ObjectID", oid(oidA), 0xf945a5261d6747a5, "b05099803df3f4948bd2f98391"},
	{"Null", null(), 0x13e608bc156defed, "03"},
	{"Bool", boolean(true), 0xbe48cc9426041338, "b9"},
	{"Doc", obj("a", i32(1), "b", arr(str("x"), null())), 0x64cce13e78b16570, "98086100 4e00a06200a09078000103 0000"},
	{"Date", date(1700000000000), 0xd5aa85997def111d, "c08000018bcfe56800"},
}

// TestHashGolden checks the frozen hashes and key bytes of goldenCases.
func TestHashGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Hash(tc.v); got != tc.hash {
				t.Errorf("Hash(%s) = %#x, frozen at %#x", show(tc.v), got, tc.hash)
			}
			key := AppendKey(nil, tc.v)
			if got, want := hex.EncodeToString(key), stripSpaces(tc.key); got != want {
				t.Errorf("AppendKey(%s) = %s, frozen at %s", show(tc.v), got, want)
			}
			if HashKey(key) != tc.hash {
				t.Errorf("HashKey(AppendKey(v)) != Hash(v)")
			}
		})
	}
}

// stripSpaces removes the spaces used to group hex digits.
func stripSpaces(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' {
			out = append(out, s[i])
		}
	}
	return string(out)
}

// TestHotPathsDoNotAllocate checks that encoding, hashing, comparing and walking do not
// allocate once warm.
func TestHotPathsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	small := obj("_id", oid(oidA), "name", str("ann"), "tags", arr(str("x"), str("y")))
	big := obj("text", str(strings.Repeat("lorem ipsum ", 40)), "n", d128("1E+6000"))
	buf := make([]byte, 0, 1024)
	Hash(big) // fill the pool and the power-of-ten cache
	for _, v := range []bsoncore.Value{i32(7), i64(1 << 40), f64(2.5), d128("19.99"), oid(oidA), str("user42"), small, big} {
		if n := testing.AllocsPerRun(100, func() { buf = AppendKey(buf[:0], v) }); n != 0 {
			t.Errorf("AppendKey(%s) allocates %v times", show(v), n)
		}
		if n := testing.AllocsPerRun(100, func() { _ = Hash(v) }); n != 0 {
			t.Errorf("Hash(%s) allocates %v times", show(v), n)
		}
		if n := testing.AllocsPerRun(100, func() { _ = Compare(v, small) }); n != 0 {
			t.Errorf("Compare(%s, …) allocates %v times", show(v), n)
		}
	}
	price, priceF := d128("19.99"), f64(19.99)
	if n := testing.AllocsPerRun(100, func() { _ = Compare(price, priceF) }); n != 0 {
		t.Errorf("Compare(decimal, double) allocates %v times", n)
	}
	doc := bsoncore.Document(small.Data)
	n := testing.AllocsPerRun(100, func() {
		WalkPath(doc, "tags", func(PathMatch) bool { return true })
	})
	if n != 0 {
		t.Errorf("WalkPath allocates %v times", n)
	}
}
