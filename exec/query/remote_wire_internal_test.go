package query

import (
	"math"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
)

// wrap makes the fields appended by f a document.
func wrap(f func(dst []byte) []byte) bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = f(d)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}

// TestScanStatsRoundTrip checks that a remote read's totals, as AppendScanStats sends them,
// decode to the same numbers, and that missing stats decode as zero.
func TestScanStatsRoundTrip(t *testing.T) {
	for _, s := range []ScanStats{
		{},
		{DocsExamined: 1, KeysExamined: 2, BytesRead: 3, Returned: 4, BytesReturned: 5},
		{DocsExamined: 1 << 40, KeysExamined: -1, BytesRead: 1 << 62, Returned: 7, BytesReturned: 1 << 33},
	} {
		d := wrap(func(dst []byte) []byte { return AppendScanStats(dst, &s) })
		if got := decodeScanStats(d.Lookup("stats")); got != s {
			t.Errorf("round trip of %+v: %+v", s, got)
		}
	}
	// Point and Partitions are the reading node's: they do not travel.
	s := ScanStats{Returned: 2, Point: true, Partitions: 3}
	d := wrap(func(dst []byte) []byte { return AppendScanStats(dst, &s) })
	if got := decodeScanStats(d.Lookup("stats")); got != (ScanStats{Returned: 2}) {
		t.Errorf("Point and Partitions travelled: %+v", got)
	}
	if got := decodeScanStats(bsoncore.Value{}); got != (ScanStats{}) {
		t.Errorf("missing stats: %+v", got)
	}
}

// TestRanges checks the encoding of hash ranges for another node: every uint64 survives the
// round trip through int64, and what is not [[long, long], ...] is refused.
func TestRanges(t *testing.T) {
	for _, rs := range [][][2]uint64{
		{},
		{{0, 1 << 62}},
		{{0, 10}, {1 << 63, math.MaxUint64}, {math.MaxUint64 - 1, math.MaxUint64}},
	} {
		got, ok := DecodeRanges(EncodeRanges(rs))
		if !ok || !slices.Equal(got, rs) {
			t.Errorf("round trip of %v: %v, %v", rs, got, ok)
		}
	}
	for _, tc := range []struct{ name, arr string }{
		{"NotPairs", `[1]`},
		{"ShortPair", `[[{"$numberLong": "1"}]]`},
		{"Int32", `[[1, 2]]`},
		{"HiInt32", `[[{"$numberLong": "1"}, 2]]`},
		{"Strings", `[["0", "1"]]`},
		{"SecondBad", `[[{"$numberLong": "1"}, {"$numberLong": "2"}], [1.5, {"$numberLong": "2"}]]`},
	} {
		if got, ok := DecodeRanges(streamtest.ExtArray(t, tc.arr)); ok {
			t.Errorf("%s: decoded %v", tc.name, got)
		}
	}
	if _, ok := DecodeRanges(bsoncore.Array{1, 2}); ok {
		t.Error("a truncated array decoded")
	}
}
