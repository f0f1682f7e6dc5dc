package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestFindRangeBoundsEveryType checks, through explain's executionStats, that an index range
// scan stops at both of its bounds for every BSON type that has a range (issue 13: a
// two-sided range read to the end of the index and still returned the right documents): the
// keys and documents examined are exactly the documents returned; with compound prefixes,
// $in and $or of ranges too. The collection holds four
// values of each type, so that the tail past each range holds the higher types; the same runs
// on a collection sharded over two shards, where each shard's scan must stop too.
func TestFindRangeBoundsEveryType(t *testing.T) {
	t.Parallel()
	oid := func(n int) bson.ObjectID {
		id, err := bson.ObjectIDFromHex(fmt.Sprintf("%024x", n))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	dec := func(s string) bson.Decimal128 {
		d, err := bson.ParseDecimal128(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	values := []any{
		1.5, int32(2), int64(3), dec("4.5"), // numbers compare as numbers, whatever their type
		"a", "b", "c", "d",
		bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "x", Value: 2}}, bson.D{{Key: "x", Value: 3}}, bson.D{{Key: "x", Value: 4}},
		bson.Binary{Data: []byte{1}}, bson.Binary{Data: []byte{2}}, bson.Binary{Data: []byte{3}}, bson.Binary{Data: []byte{4}},
		oid(1), oid(2), oid(3), oid(4),
		false, true,
		bson.DateTime(1000), bson.DateTime(2000), bson.DateTime(3000), bson.DateTime(4000),
		bson.Timestamp{T: 1}, bson.Timestamp{T: 2}, bson.Timestamp{T: 3}, bson.Timestamp{T: 4},
	}
	var docs []any
	for i, v := range values {
		for g := range 3 { // three documents per value, in groups g 0, 1 and 2
			docs = append(docs, bson.D{{Key: "_id", Value: i*3 + g}, {Key: "v", Value: v}, {Key: "g", Value: g}})
		}
	}
	db := plainAndSharded(t, docs, []mongo.IndexModel{
		{Keys: bson.D{{Key: "v", Value: 1}}}, {Keys: bson.D{{Key: "g", Value: 1}, {Key: "v", Value: 1}}},
	})
	ctx := context.Background()
	rng := func(lo, hi any) bson.D { return bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: hi}} }
	for _, tc := range []struct {
		name   string
		filter bson.D
		hint   string
		n      int64 // documents returned, and so keys and documents examined
	}{
		{"Numbers", bson.D{{Key: "v", Value: rng(2, int64(4))}}, "v_1", 6},
		{"NumbersExclusive", bson.D{{Key: "v", Value: bson.D{{Key: "$gt", Value: 1.5}, {Key: "$lte", Value: dec("3")}}}}, "v_1", 6},
		{"Strings", bson.D{{Key: "v", Value: rng("b", "d")}}, "v_1", 6},
		{"Objects", bson.D{{Key: "v", Value: rng(bson.D{{Key: "x", Value: 2}}, bson.D{{Key: "x", Value: 4}})}}, "v_1", 6},
		{"BinData", bson.D{{Key: "v", Value: rng(bson.Binary{Data: []byte{2}}, bson.Binary{Data: []byte{4}})}}, "v_1", 6},
		{"ObjectIDs", bson.D{{Key: "v", Value: rng(oid(2), oid(4))}}, "v_1", 6},
		{"Booleans", bson.D{{Key: "v", Value: rng(false, true)}}, "v_1", 3},
		{"Dates", bson.D{{Key: "v", Value: rng(bson.DateTime(2000), bson.DateTime(4000))}}, "v_1", 6},
		{"Timestamps", bson.D{{Key: "v", Value: rng(bson.Timestamp{T: 2}, bson.Timestamp{T: 4})}}, "v_1", 6},
		{"OneSidedStopsAtType", bson.D{{Key: "v", Value: bson.D{{Key: "$gt", Value: "b"}}}}, "v_1", 6},
		{"CompoundPrefixRange", bson.D{{Key: "g", Value: 1}, {Key: "v", Value: rng("b", "d")}}, "g_1_v_1", 2},
		{"InPlusRange", bson.D{{Key: "g", Value: bson.D{{Key: "$in", Value: bson.A{0, 2}}}}, {Key: "v", Value: rng(bson.DateTime(2000), bson.DateTime(4000))}}, "g_1_v_1", 4},
		{"OrOfRanges", bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "v", Value: rng("a", "b")}},
			bson.D{{Key: "v", Value: rng(oid(2), oid(3))}}, bson.D{{Key: "v", Value: true}}}}}, "v_1", 9},
		{"OrOfRangesCompound", bson.D{{Key: "g", Value: 2}, {Key: "$or", Value: bson.A{bson.D{{Key: "v", Value: rng(1.5, int32(3))}},
			bson.D{{Key: "v", Value: rng(bson.DateTime(3000), bson.DateTime(9000))}}}}}, "g_1_v_1", 4},
		{"InPlusRangeNumbers", bson.D{{Key: "g", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}, {Key: "v", Value: rng(int32(2), 4.5)}}, "g_1_v_1", 4},
	} {
		for _, name := range []string{"plain", "sharded"} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				ex := explainRead(t, db, bson.D{{Key: "find", Value: name}, {Key: "filter", Value: tc.filter}, {Key: "hint", Value: tc.hint}})
				if got, want := [3]int64{ex.n, ex.keys, ex.docs}, [3]int64{tc.n, tc.n, tc.n}; got != want {
					t.Errorf("%v: returned, keys and documents examined %v; want %v", tc.filter, got, want)
				}
				n, err := db.Collection(name).CountDocuments(ctx, tc.filter)
				if err != nil || n != tc.n {
					t.Errorf("%v: count %d, %v; want %d", tc.filter, n, err, tc.n)
				}
			})
		}
	}
}
