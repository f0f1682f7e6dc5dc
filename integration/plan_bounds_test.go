package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestFindPlanBounds checks, through explain's executionStats and the results, what the
// planner reads beyond plain ranges (TestFindRangeBoundsEveryType), on a plain collection and
// on one sharded over two shards:
//   - a regex: the strings that start with its literal prefix, or every string, a symbol
//     among them, and the stored regex itself; the regex tested on each key;
//   - $elemMatch on values: its operators intersected on a multikey index;
//   - equality to null and $exists: false: a missing field's key is null;
//   - the fields after a compound index's range, checked on each key before its document
//     is read, and the seek past the keys that fail;
//   - an $or of indexed fields: one index scan per branch;
//   - bounds on two fields under one array, which are not compounded: {"x.a": 1, "x.b":
//     106} matches a document through two elements of x, whose index entries pair each
//     element's a and b (the index returned nothing before).
func TestFindPlanBounds(t *testing.T) {
	t.Parallel()
	docs := []any{
		bson.D{{Key: "_id", Value: "regex"}, {Key: "g", Value: 0}, {Key: "name", Value: bson.Regex{Pattern: "^n01"}}},
		bson.D{{Key: "_id", Value: "symbol"}, {Key: "g", Value: 1}, {Key: "name", Value: bson.Symbol("n01sym")}},
	}
	for i := range 60 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "g", Value: i % 3},
			{Key: "name", Value: fmt.Sprintf("n%03d", i)}, {Key: "tags", Value: bson.A{i, i + 1}},
			{Key: "x", Value: bson.A{bson.D{{Key: "a", Value: i % 5}, {Key: "b", Value: i}},
				bson.D{{Key: "a", Value: i%5 + 10}, {Key: "b", Value: i + 100}}}}})
	}
	db := plainAndSharded(t, docs, []mongo.IndexModel{
		{Keys: bson.D{{Key: "name", Value: 1}}}, {Keys: bson.D{{Key: "tags", Value: 1}}},
		{Keys: bson.D{{Key: "x.a", Value: 1}, {Key: "x.b", Value: 1}}},
		{Keys: bson.D{{Key: "g", Value: 1}, {Key: "name", Value: 1}}},
		{Keys: bson.D{{Key: "g", Value: -1}, {Key: "name", Value: -1}}},
	})
	ctx := context.Background()
	for _, tc := range []struct {
		name              string
		filter            bson.D
		hint              string
		sort              bson.D // read the index in reverse
		n, keys, docsRead int64
	}{
		// n010..n019, the symbol and the stored regex.
		{"RegexPrefix", bson.D{{Key: "name", Value: bson.Regex{Pattern: "^n01"}}}, "", nil, 12, 12, 12},
		// "?" makes the 1 optional: the prefix is "n0", which all 60 strings and the symbol
		// start with; the regex, tested on each key, passes n000..n009 and n010 to be read.
		{"RegexOptionalChar", bson.D{{Key: "name", Value: bson.Regex{Pattern: "^n01?0"}}}, "", nil, 11, 61, 11},
		{"RegexQuoted", bson.D{{Key: "name", Value: bson.D{{Key: "$regex", Value: `^\Qn0\E2`}}}}, "", nil, 10, 10, 10},
		// No literal prefix: every string key is read and tested, and only the matches'
		// documents (i = 5, 15, ..., 55; n010..n019 and the symbol).
		{"RegexUnanchored", bson.D{{Key: "name", Value: bson.Regex{Pattern: "5$"}}}, "", nil, 6, 61, 6},
		{"RegexCaseless", bson.D{{Key: "name", Value: bson.Regex{Pattern: "^N01", Options: "i"}}}, "", nil, 11, 61, 11},
		{"InUnanchoredRegexAndString", bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: bson.A{bson.Regex{Pattern: "9$"}, "n050"}}}}}, "", nil, 7, 61, 7},
		{"InRegexAndString", bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: bson.A{bson.Regex{Pattern: "^n02"}, "n050"}}}}}, "", nil, 11, 11, 11},
		// i = 9, 10 and 11 hold 10 or 11; {tags: {$gte: 10, $lt: 12}} would read from 10 to the end.
		{"ElemMatchRange", bson.D{{Key: "tags", Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "$gte", Value: 10}, {Key: "$lt", Value: 12}}}}}}, "", nil, 3, 4, 3},
		// The ranges bound g to [1, 3); the key check passes the names below n010 (i = 1, 2,
		// 4, 5, 7, 8) to be read, and the first name above sends the scan to the next g: 3
		// keys and one past them for each g (forward), one before and 3 (in reverse).
		{"RangeThenRange", bson.D{{Key: "g", Value: bson.D{{Key: "$gte", Value: 1}, {Key: "$lt", Value: 3}}},
			{Key: "name", Value: bson.D{{Key: "$lt", Value: "n010"}}}}, "g_1_name_1", nil, 6, 8, 6},
		{"RangeThenRangeReverse", bson.D{{Key: "g", Value: bson.D{{Key: "$gte", Value: 1}, {Key: "$lt", Value: 3}}},
			{Key: "name", Value: bson.D{{Key: "$lt", Value: "n010"}}}}, "g_1_name_1", bson.D{{Key: "g", Value: -1}, {Key: "name", Value: -1}}, 6, 8, 6},
		{"RangeThenRangeDesc", bson.D{{Key: "g", Value: bson.D{{Key: "$gte", Value: 1}, {Key: "$lt", Value: 3}}},
			{Key: "name", Value: bson.D{{Key: "$lt", Value: "n010"}}}}, "g_-1_name_-1", nil, 6, 8, 6},
		// Unbounded g, hinted: every entry is read (no seek: g varies), and only the documents
		// of the names within the bounds (n050..n059).
		{"SkippedFieldThenRange", bson.D{{Key: "name", Value: bson.D{{Key: "$gte", Value: "n050"}, {Key: "$lt", Value: "n060"}}}},
			"g_1_name_1", nil, 10, 62, 10},
		// The regex and symbol documents have no tags: a missing field is indexed as null.
		{"Null", bson.D{{Key: "tags", Value: nil}}, "", nil, 2, 2, 2},
		{"ExistsFalse", bson.D{{Key: "tags", Value: bson.D{{Key: "$exists", Value: false}}}}, "", nil, 2, 2, 2},
		{"InWithNull", bson.D{{Key: "tags", Value: bson.D{{Key: "$in", Value: bson.A{nil, 5}}}}}, "", nil, 4, 4, 4},
		// An $or of two indexed fields: one scan each, each document read once (i = 5; i = 29
		// and 30 hold 30 in tags).
		{"OrOfFields", bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "name", Value: "n005"}}, bson.D{{Key: "tags", Value: 30}},
			bson.D{{Key: "name", Value: "n030"}}}}}, "", nil, 3, 4, 3},
		// i = 6: x.a 1 in its first element, x.b 106 in its second. The scan reads x.a = 1:
		// i = 1, 6, ..., 56.
		{"SharedArrayPrefix", bson.D{{Key: "x.a", Value: 1}, {Key: "x.b", Value: 106}}, "", nil, 1, 12, 12},
	} {
		for _, name := range []string{"plain", "sharded"} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				find := bson.D{{Key: "find", Value: name}, {Key: "filter", Value: tc.filter}}
				if tc.hint != "" {
					find = append(find, bson.E{Key: "hint", Value: tc.hint})
				}
				if tc.sort != nil {
					find = append(find, bson.E{Key: "sort", Value: tc.sort})
				}
				ex := explainRead(t, db, find)
				if got, want := [3]int64{ex.n, ex.keys, ex.docs}, [3]int64{tc.n, tc.keys, tc.docsRead}; got != want {
					t.Errorf("%v: returned, keys and documents examined %v; want %v", tc.filter, got, want)
				}
				// No case fixes the shard key g: the sharded collection is read on both shards,
				// the plain one on the shard that holds it.
				if want := map[string]int{"plain": 1, "sharded": 2}[name]; ex.shards != want {
					t.Errorf("%v: read on %d shards, want %d", tc.filter, ex.shards, want)
				}
				// The index's answer is the collection scan's.
				for _, opts := range []*options.FindOptionsBuilder{options.Find(), options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}})} {
					cur, err := db.Collection(name).Find(ctx, tc.filter, opts)
					if err != nil {
						t.Fatal(err)
					}
					var got []bson.Raw
					if err := cur.All(ctx, &got); err != nil || int64(len(got)) != tc.n {
						t.Errorf("%v: %d documents, %v; want %d", tc.filter, len(got), err, tc.n)
					}
				}
			})
		}
	}
}
