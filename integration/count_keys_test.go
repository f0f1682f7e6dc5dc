package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestCountReadsKeys checks that count and the driver's CountDocuments (an aggregate of $match
// and a $group that reads no field) count index keys without reading documents where the
// index bounds hold only matches (MongoDB's COUNT_SCAN), and read documents where they do
// not, on a plain collection and on one sharded over two shards: explain's keys and documents
// examined and the shards read are asserted, and every count is the number of documents a
// collection scan finds.
func TestCountReadsKeys(t *testing.T) {
	t.Parallel()
	var docs []any
	for i := range 300 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "g", Value: i % 3}, {Key: "t", Value: i},
			{Key: "v", Value: i % 7}, {Key: "tags", Value: bson.A{i % 10, i%10 + 1}}})
	}
	db := plainAndSharded(t, docs, []mongo.IndexModel{
		{Keys: bson.D{{Key: "t", Value: 1}}}, {Keys: bson.D{{Key: "v", Value: 1}, {Key: "t", Value: -1}}},
		{Keys: bson.D{{Key: "tags", Value: 1}}},
	})
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		filter    bson.D
		hint      string
		n         int64
		countScan bool // one key range and nothing to test: COUNT_SCAN
		// keys and documents examined on the plain and the sharded collection; shards the
		// sharded one reads (the plain one is read on one)
		keys, docs [2]int64
		shards     int
	}{
		{"Range", bson.D{{Key: "t", Value: bson.D{{Key: "$gte", Value: 100}, {Key: "$lt", Value: 150}}}}, "", 50, true, [2]int64{50, 50}, [2]int64{}, 2},
		{"Equality", bson.D{{Key: "v", Value: 3}}, "", 43, true, [2]int64{43, 43}, [2]int64{}, 2},
		{"PrefixThenRange", bson.D{{Key: "v", Value: 3}, {Key: "t", Value: bson.D{{Key: "$lt", Value: 100}}}}, "", 14, true, [2]int64{14, 14}, [2]int64{}, 2},
		// Two ranges of t: the keys alone still answer.
		{"In", bson.D{{Key: "t", Value: bson.D{{Key: "$in", Value: bson.A{5, 7, 400}}}}}, "", 2, false, [2]int64{2, 2}, [2]int64{}, 2},
		// A range on v (5 and 6), then t tested on each key: the 3 matches, and on each shard
		// the first key of each v past them, which seeks to the next v.
		{"RangeThenKeyCheck", bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: 5}}}, {Key: "t", Value: bson.D{{Key: "$gte", Value: 290}}}},
			"v_1_t_-1", 3, false, [2]int64{5, 7}, [2]int64{}, 2},
		// An $or of two exact branches on two indexes: each branch's keys (t 0 to 19, then
		// the 43 of v 3), the 3 documents in both counted once.
		{"Or", bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "t", Value: bson.D{{Key: "$lt", Value: 20}}}}, bson.D{{Key: "v", Value: 3}}}}},
			"", 60, false, [2]int64{63, 63}, [2]int64{}, 2},
		// g is in no index with t (and, the shard key, targets one shard of the sharded
		// collection, which scans it); tags holds arrays.
		{"FieldOutsideIndex", bson.D{{Key: "t", Value: bson.D{{Key: "$lt", Value: 30}}}, {Key: "g", Value: 1}}, "", 10, false,
			[2]int64{30, 0}, [2]int64{30, 100}, 1},
		{"Multikey", bson.D{{Key: "tags", Value: 4}}, "", 60, false, [2]int64{60, 60}, [2]int64{60, 60}, 2},
		// null matches a missing field too: the bounds [undefined], [null] hold no key of t.
		{"Null", bson.D{{Key: "t", Value: nil}}, "", 0, false, [2]int64{}, [2]int64{}, 2},
	} {
		for _, name := range []string{"plain", "sharded"} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				coll := db.Collection(name)
				cur, err := coll.Find(ctx, tc.filter, options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}))
				if err != nil {
					t.Fatal(err)
				}
				var found []bson.Raw
				if err := cur.All(ctx, &found); err != nil || int64(len(found)) != tc.n {
					t.Fatalf("%v: find returned %d documents, %v; want %d", tc.filter, len(found), err, tc.n)
				}
				opts := options.Count()
				if tc.hint != "" {
					opts.SetHint(tc.hint)
				}
				if n, err := coll.CountDocuments(ctx, tc.filter, opts); err != nil || n != tc.n {
					t.Errorf("%v: CountDocuments %d, %v; want %d", tc.filter, n, err, tc.n)
				}
				var res struct{ N int64 }
				count := bson.D{{Key: "count", Value: name}, {Key: "query", Value: tc.filter}}
				agg := bson.D{{Key: "aggregate", Value: name}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: tc.filter}},
					bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}},
					{Key: "cursor", Value: bson.D{}}}
				if tc.hint != "" {
					count = append(count, bson.E{Key: "hint", Value: tc.hint})
					agg = append(agg, bson.E{Key: "hint", Value: tc.hint})
				}
				if err := db.RunCommand(ctx, count).Decode(&res); err != nil || res.N != tc.n {
					t.Errorf("%v: count %d, %v; want %d", tc.filter, res.N, err, tc.n)
				}
				for _, cmd := range []bson.D{count, agg} {
					ex := explainRead(t, db, cmd)
					k, shards := 0, 1
					if name == "sharded" {
						k, shards = 1, tc.shards
					}
					if ex.keys != tc.keys[k] || ex.docs != tc.docs[k] || ex.shards != shards {
						t.Errorf("%s %v: %d keys and %d documents examined on %d shards; want %d, %d, %d",
							cmd[0].Key, tc.filter, ex.keys, ex.docs, ex.shards, tc.keys[k], tc.docs[k], shards)
					}
					if ex.countScan != tc.countScan {
						t.Errorf("%s %v: COUNT_SCAN %v, want %v", cmd[0].Key, tc.filter, ex.countScan, tc.countScan)
					}
				}
			})
		}
	}
}
