package integration

import (
	"cmp"
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestDistinctScan checks that distinct on the first field of an index that answers its
// filter reads one key and one document per value (MongoDB's DISTINCT_SCAN), on a plain
// collection and on one sharded over two shards, and lists what a collection scan lists: null
// once (the keys of null and of a missing field are all read, the missing ones listing
// nothing), numbers and strings as stored. So does a $group by that field without
// accumulators, and one of $first accumulators after a sort on the field (the latest reading
// of each device), or of $last ones after a sort the other way.
func TestDistinctScan(t *testing.T) {
	t.Parallel()
	var docs []any
	for i := range 1000 {
		var dev any = fmt.Sprintf("dev-%02d", i%40)
		switch i % 100 {
		case 1:
			dev = nil
		case 2:
			dev = 2.5
		case 3:
			dev = int64(3)
		}
		d := bson.D{{Key: "_id", Value: i}, {Key: "g", Value: i % 3}, {Key: "t", Value: i}}
		if i%50 != 0 { // 20 documents have no dev, the first one among them
			d = append(d, bson.E{Key: "dev", Value: dev})
		}
		docs = append(docs, d)
	}
	db := plainAndSharded(t, docs, []mongo.IndexModel{
		{Keys: bson.D{{Key: "dev", Value: 1}, {Key: "t", Value: 1}}}, {Keys: bson.D{{Key: "t", Value: 1}}},
		{Keys: bson.D{{Key: "g", Value: 1}, {Key: "dev", Value: 1}}},
	})
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		filter bson.D
		scan   bool // DISTINCT_SCAN
		values int  // how many
		// keys and documents examined on the plain and the sharded collection (both shards
		// read, each holding most values)
		keys, docs [2]int64
		sharded    int // shards read of the sharded collection (0: both)
	}{
		// 40 strings, null, 2.5 and 3: the first key of each, every null or missing one (30);
		// on each of the two shards.
		{"All", bson.D{}, true, 43, [2]int64{72, 114}, [2]int64{72, 114}, 0},
		{"Range", bson.D{{Key: "dev", Value: bson.D{{Key: "$gte", Value: "dev-10"}, {Key: "$lt", Value: "dev-20"}}}}, true, 10,
			[2]int64{10, 20}, [2]int64{10, 20}, 0},
		// t tested on each key: the first key of each dev whose t passes.
		{"KeyCheck", bson.D{{Key: "dev", Value: bson.D{{Key: "$gte", Value: "dev-30"}}}, {Key: "t", Value: bson.D{{Key: "$gte", Value: 900}}}}, true, 10,
			[2]int64{20, 39}, [2]int64{10, 19}, 0},
		// g fixed, {g: 1, dev: 1}: the first key of each dev within g 1 (of 334 documents),
		// and its 10 null or missing ones; or so within g 1 and then g 2 (two ranges). The
		// sharded collection is sharded on g: g 1 is on one shard.
		{"PrefixEq", bson.D{{Key: "g", Value: 1}}, true, 43, [2]int64{52, 52}, [2]int64{52, 52}, 1},
		{"PrefixIn", bson.D{{Key: "g", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}}, true, 43, [2]int64{104, 104}, [2]int64{104, 104}, 0},
		// The planner reads t's index: every match's document.
		{"OtherIndex", bson.D{{Key: "t", Value: bson.D{{Key: "$lt", Value: 100}}}}, false, 43, [2]int64{100, 100}, [2]int64{100, 100}, 0},
	} {
		for _, name := range []string{"plain", "sharded"} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				coll := db.Collection(name)
				var got, want bson.A
				if err := coll.Distinct(ctx, "dev", tc.filter).Decode(&got); err != nil {
					t.Fatal(err)
				}
				opts := options.Distinct().SetHint(bson.D{{Key: "$natural", Value: 1}})
				if err := coll.Distinct(ctx, "dev", tc.filter, opts).Decode(&want); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != tc.values {
					t.Errorf("%v: distinct %v; a collection scan's %v (%d values)", tc.filter, got, want, tc.values)
				}
				ex := explainRead(t, db, bson.D{{Key: "distinct", Value: name}, {Key: "key", Value: "dev"}, {Key: "query", Value: tc.filter}})
				if ex.distinctScan != tc.scan {
					t.Errorf("%v: DISTINCT_SCAN %v, want %v", tc.filter, ex.distinctScan, tc.scan)
				}
				// A $group by dev without accumulators: the same values, read the same way.
				pipeline := bson.A{bson.D{{Key: "$match", Value: tc.filter}}, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$dev"}}}},
					bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}}
				cur, err := coll.Aggregate(ctx, pipeline)
				if err != nil {
					t.Fatal(err)
				}
				var groups []struct {
					ID any `bson:"_id"`
				}
				if err := cur.All(ctx, &groups); err != nil {
					t.Fatal(err)
				}
				ids := bson.A{}
				for _, g := range groups {
					ids = append(ids, g.ID)
				}
				if fmt.Sprint(ids) != fmt.Sprint(want) {
					t.Errorf("%v: $group by dev %v; distinct's %v", tc.filter, ids, want)
				}
				agg := explainRead(t, db, bson.D{{Key: "aggregate", Value: name}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}})
				if agg.distinctScan != tc.scan {
					t.Errorf("%v: the $group's DISTINCT_SCAN %v, want %v", tc.filter, agg.distinctScan, tc.scan)
				}
				k, shards := 0, 1
				if name == "sharded" {
					k, shards = 1, cmp.Or(tc.sharded, 2)
				}
				for _, x := range []explained{ex, agg} {
					if x.keys != tc.keys[k] || x.docs != tc.docs[k] || x.shards != shards {
						t.Errorf("%v: %d keys and %d documents examined on %d shards, want %d, %d, %d",
							tc.filter, x.keys, x.docs, x.shards, tc.keys[k], tc.docs[k], shards)
					}
				}
			})
		}
	}
	// The latest reading of each device: {dev: 1, t: 1} read backwards, its first entry of
	// each dev (the null and missing ones all read), as a collection scan and a sort find it:
	// the $first of each dev sorted descending, or its $last sorted ascending (which reads the
	// index the same way, MongoDB's reverse DISTINCT_SCAN), or so after a sort on t alone
	// (read as sorted on dev, then t), or with no sort its $top by t descending or its
	// $bottom by dev and t ascending.
	group := func(acc string) bson.D {
		return bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$dev"}, {Key: "last", Value: bson.D{{Key: acc, Value: "$$ROOT"}}}}}}
	}
	byID := bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}
	latest := map[string]bson.A{
		"$first":      {bson.D{{Key: "$sort", Value: bson.D{{Key: "dev", Value: -1}, {Key: "t", Value: -1}}}}, group("$first"), byID},
		"$last":       {bson.D{{Key: "$sort", Value: bson.D{{Key: "dev", Value: 1}, {Key: "t", Value: 1}}}}, group("$last"), byID},
		"$first by t": {bson.D{{Key: "$sort", Value: bson.D{{Key: "t", Value: -1}}}}, group("$first"), byID},
		"$last by t":  {bson.D{{Key: "$sort", Value: bson.D{{Key: "t", Value: 1}}}}, group("$last"), byID},
		"$top": {bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$dev"}, {Key: "last", Value: bson.D{{Key: "$top",
			Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "t", Value: -1}}}, {Key: "output", Value: "$$ROOT"}}}}}}}}, byID},
		"$bottom": {bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$dev"}, {Key: "last", Value: bson.D{{Key: "$bottom",
			Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "dev", Value: 1}, {Key: "t", Value: 1}}}, {Key: "output", Value: "$$ROOT"}}}}}}}}, byID},
	}
	for _, name := range []string{"plain", "sharded"} {
		for _, acc := range []string{"$first", "$last", "$first by t", "$last by t", "$top", "$bottom"} {
			var got, want []bson.Raw
			for i, opts := range []*options.AggregateOptionsBuilder{options.Aggregate(), options.Aggregate().SetHint(bson.D{{Key: "$natural", Value: 1}})} {
				cur, err := db.Collection(name).Aggregate(ctx, latest[acc], opts)
				if err != nil {
					t.Fatal(err)
				}
				out := &got
				if i == 1 {
					out = &want
				}
				if err := cur.All(ctx, out); err != nil {
					t.Fatal(err)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 43 {
				t.Errorf("%s: the latest of each dev by %s %v; a collection scan's %v", name, acc, got, want)
			}
			ex := explainRead(t, db, bson.D{{Key: "aggregate", Value: name}, {Key: "pipeline", Value: latest[acc]}, {Key: "cursor", Value: bson.D{}}})
			cost := map[string][3]int64{"plain": {72, 72, 1}, "sharded": {114, 114, 2}}[name] // keys, documents, shards
			if got := [3]int64{ex.keys, ex.docs, int64(ex.shards)}; !ex.distinctScan || got != cost {
				t.Errorf("%s: the latest of each dev by %s examined %v (keys, documents, shards), DISTINCT_SCAN %v; want %v, true",
					name, acc, got, ex.distinctScan, cost)
			}
		}
	}
}
