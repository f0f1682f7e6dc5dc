package integration

import (
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
// of each device).
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
	})
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		filter     bson.D
		scan       bool  // DISTINCT_SCAN
		values     int   // how many
		keys, docs int64 // examined
	}{
		// 40 strings, null, 2.5 and 3: the first key of each, every null or missing one (30).
		{"All", bson.D{}, true, 43, 72, 72},
		{"Range", bson.D{{Key: "dev", Value: bson.D{{Key: "$gte", Value: "dev-10"}, {Key: "$lt", Value: "dev-20"}}}}, true, 10, 10, 10},
		// t tested on each key: the first key of each dev whose t passes.
		{"KeyCheck", bson.D{{Key: "dev", Value: bson.D{{Key: "$gte", Value: "dev-30"}}}, {Key: "t", Value: bson.D{{Key: "$gte", Value: 900}}}}, true, 10, 20, 10},
		// The planner reads t's index: every match's document.
		{"OtherIndex", bson.D{{Key: "t", Value: bson.D{{Key: "$lt", Value: 100}}}}, false, 43, 100, 100},
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
				if name == "plain" && (ex.keys != tc.keys || ex.docs != tc.docs) {
					t.Errorf("%v: %d keys and %d documents examined, want %d and %d", tc.filter, ex.keys, ex.docs, tc.keys, tc.docs)
				}
			})
		}
	}
	// The latest reading of each device: {dev: 1, t: 1} read backwards, its first entry of
	// each dev (the null and missing ones all read), as a collection scan and a sort find it.
	latest := bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "dev", Value: -1}, {Key: "t", Value: -1}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$dev"}, {Key: "last", Value: bson.D{{Key: "$first", Value: "$$ROOT"}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}}
	for _, name := range []string{"plain", "sharded"} {
		var got, want []bson.Raw
		for i, opts := range []*options.AggregateOptionsBuilder{options.Aggregate(), options.Aggregate().SetHint(bson.D{{Key: "$natural", Value: 1}})} {
			cur, err := db.Collection(name).Aggregate(ctx, latest, opts)
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
			t.Errorf("%s: the latest of each dev %v; a collection scan's %v", name, got, want)
		}
		ex := explainRead(t, db, bson.D{{Key: "aggregate", Value: name}, {Key: "pipeline", Value: latest}, {Key: "cursor", Value: bson.D{}}})
		if !ex.distinctScan || name == "plain" && ex.docs != 72 {
			t.Errorf("%s: the latest of each dev read %d documents, DISTINCT_SCAN %v; want 72, true", name, ex.docs, ex.distinctScan)
		}
	}
}
