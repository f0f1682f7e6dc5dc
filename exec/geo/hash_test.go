package geo

import (
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// hasherCases are 2d index options with MongoDB's InvalidOptions message
// (GeoHashConverter::createFromDoc), "" for valid ones.
var hasherCases = []struct {
	name     string
	bits     int
	min, max float64
	err      string
}{
	{"Defaults", 26, -180, 180, ""},
	{"ThirtyTwoBits", 32, -1, 1, ""},
	{"ZeroBits", 0, -180, 180, "bits for hash must be > 0 and <= 32, but 0 bits were specified"},
	{"ThirtyThreeBits", 33, -180, 180, "bits for hash must be > 0 and <= 32, but 33 bits were specified"},
	{"EmptyRegion", 26, 5, 5, "region for hash must be valid and have positive area, but [5, 5] was specified"},
	{"InvertedRegion", 26, 10, -10, "region for hash must be valid and have positive area, but [10, -10] was specified"},
}

func TestNewHasher(t *testing.T) {
	for _, tc := range hasherCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewHasher(tc.bits, tc.min, tc.max)
			got := ""
			if err != nil {
				me := mongoerr.As(err)
				if me == nil || me.Code != mongoerr.InvalidOptions {
					t.Fatalf("error %v is not InvalidOptions", err)
				}
				got = me.Message
			}
			if got != tc.err {
				t.Fatalf("got %q, want %q", got, tc.err)
			}
		})
	}
}

// TestHasherHash checks hashes against MongoDB's GeoHash: the origin of [-180, 180] is the
// corner of the top-right quadrant, "11" then zeros.
func TestHasherHash(t *testing.T) {
	h, _ := NewHasher(26, -180, 180)
	cases := []struct {
		x, y float64
		want uint64
	}{
		{0, 0, 0xC000000000000000},
		{-180, -180, 0},
		{-180, 0, 0x4000000000000000},
		{180, 180, 0xFFFFFFFFFFFFF000}, // the last bucket; 52 bits used
	}
	for _, tc := range cases {
		if got, ok := h.Hash(tc.x, tc.y); !ok || got != tc.want {
			t.Errorf("Hash(%v, %v) = %#x, %v; want %#x", tc.x, tc.y, got, ok, tc.want)
		}
	}
	if _, ok := h.Hash(180.5, 0); ok {
		t.Error("a point out of bounds hashed")
	}
}

// locationCases are values at a 2d index's field with their number of locations or
// MongoDB's error code (ExpressionKeysPrivate::get2DKeys, GeoHashConverter::hash).
var locationCases = []struct {
	name, value string
	n           int
	code        mongoerr.Code
}{
	{"Pair", `[1, 2]`, 1, 0},
	{"Document", `{"lng": 1, "lat": 2}`, 1, 0},
	{"ExtraElements", `[1, 2, 3]`, 1, 0},
	{"List", `[[1, 2], {"x": 3, "y": 4}, []]`, 2, 0},
	{"Empty", `[]`, 0, 0},
	{"NotALocation", `"here"`, 0, 0},
	{"OneElement", `[1]`, 0, mongoerr.Location13068},
	{"NotNumbers", `[1, "a"]`, 0, mongoerr.Location13026},
	{"GeoJSON", `{"type": "Point", "coordinates": [1, 2]}`, 0, mongoerr.Location16804},
	{"OutOfBounds", `[200, 0]`, 0, mongoerr.Location13027},
	{"ListOutOfBounds", `[[1, 2], [0, -181]]`, 0, mongoerr.Location13027},
}

func TestHasherLocationHashes(t *testing.T) {
	h, _ := NewHasher(26, -180, 180)
	doc := bsoncore.Document(bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()))
	for _, tc := range locationCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := h.LocationHashes(ext(t, tc.value), doc)
			if tc.code != 0 {
				if me := mongoerr.As(err); me == nil || me.Code != tc.code {
					t.Fatalf("error %v, want code %d", err, tc.code)
				}
				return
			}
			if err != nil || len(got) != tc.n {
				t.Fatalf("got %d hashes, %v; want %d", len(got), err, tc.n)
			}
		})
	}
	_, err := h.LocationHashes(ext(t, `[200, 0]`), doc)
	if want := "point not in interval of [ -180, 180 ] :: caused by :: { _id: 1 }"; err == nil || mongoerr.As(err).Message != want {
		t.Fatalf("message %v, want %q", err, want)
	}
}

// TestHasherRangesCover checks on random boxes that every point in a box hashes into one
// of its ranges, and that the ranges stay few and close to the box.
func TestHasherRangesCover(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, bits := range []int{1, 5, 26, 32} {
		h, _ := NewHasher(bits, -180, 180)
		for range 200 {
			size := r.Float64() * r.Float64() * 100
			b := Box{r.Float64()*400 - 200, r.Float64()*400 - 200, 0, 0}
			b.MaxX, b.MaxY = b.MinX+size*r.Float64(), b.MinY+size
			ranges := h.Ranges(b)
			if len(ranges) > 36 {
				t.Fatalf("%d bits, box %v: %d ranges", bits, b, len(ranges))
			}
			for range 50 {
				x, y := b.MinX+r.Float64()*(b.MaxX-b.MinX), b.MinY+r.Float64()*(b.MaxY-b.MinY)
				hash, ok := h.Hash(x, y)
				if !ok {
					continue
				}
				if !inHashRanges(ranges, hash) {
					t.Fatalf("%d bits, box %v: point (%v, %v) hash %#x not in %v", bits, b, x, y, hash, ranges)
				}
			}
		}
	}
}

// inHashRanges reports whether hash is in one of rs.
func inHashRanges(rs []HashRange, hash uint64) bool {
	for _, r := range rs {
		if hash >= r.Lo && hash <= r.Hi {
			return true
		}
	}
	return false
}
