package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The differences TestDifferentialShardedVsUnsharded found, reduced to a few documents each.

// diffPair creates an unsharded collection and one sharded on {k: "hashed"} over two shards,
// fills both with docs, and returns them.
func diffPair(t *testing.T, docs []any, indexes ...bson.D) (plain, sharded *mongo.Collection) {
	t.Helper()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := c.Database(dbName(t))
	shardColl(t, c, db.Name()+".sharded", "k", bson.E{Key: "numInitialChunks", Value: 16})
	plain, sharded = db.Collection("plain"), db.Collection("sharded")
	for _, coll := range []*mongo.Collection{plain, sharded} {
		for _, keys := range indexes {
			if _, err := coll.Indexes().CreateOne(context.Background(), mongo.IndexModel{Keys: keys}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := coll.InsertMany(context.Background(), docs); err != nil {
			t.Fatal(err)
		}
	}
	return plain, sharded
}

// diffAggRaw runs a pipeline and returns its documents as canonical Extended JSON.
func diffAggRaw(t *testing.T, coll *mongo.Collection, pipeline mongo.Pipeline) []string {
	t.Helper()
	cur, err := coll.Aggregate(context.Background(), pipeline)
	if err != nil {
		t.Fatalf("%s: %v", coll.Name(), err)
	}
	var out []string
	for cur.Next(context.Background()) {
		out = append(out, cur.Current.String())
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDifferentialSumTypes: $sum and $avg give MongoDB's types and values whatever the order
// of their inputs and however shards split them. They used to depend on the order: an int32
// sum that crossed 2^31 on the way stayed int64, an int64 sum that overflowed on the way
// stayed a double, and doubles added to a decimal sum were rounded to 15 digits one by one.
func TestDifferentialSumTypes(t *testing.T) {
	t.Parallel()
	var docs []any
	for i := range 40 {
		d := bson.D{{Key: "_id", Value: i}, {Key: "k", Value: fmt.Sprintf("k%d", i)}, {Key: "c", Value: int32(i)}, {Key: "b", Value: int64(i)}}
		switch i {
		case 3:
			d[2].Value, d[3].Value = int32(2147483600), int64(1<<62)
		case 17:
			d[2].Value, d[3].Value = int32(-2147483000), int64(1<<62)
		case 29:
			d[3].Value = int64(-(1 << 62))
		}
		if i%4 == 0 {
			d = append(d, bson.E{Key: "m", Value: float64(i) + 0.25})
		}
		if i == 5 {
			d = append(d, bson.E{Key: "m", Value: diffDecimalOf(t, "0.1")})
		}
		docs = append(docs, d)
	}
	plain, sharded := diffPair(t, docs)
	pipeline := mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil},
		{Key: "c", Value: bson.D{{Key: "$sum", Value: "$c"}}}, {Key: "b", Value: bson.D{{Key: "$sum", Value: "$b"}}},
		{Key: "m", Value: bson.D{{Key: "$sum", Value: "$m"}}}, {Key: "a", Value: bson.D{{Key: "$avg", Value: "$b"}}}}}}}
	// c: 2147483600 - 2147483000 + (0+…+39 - 3 - 17) = 1360; b: 2^62 + (0+…+39 - 3 - 17 - 29);
	// m: 0.1 + Σ(i + 0.25) over i = 0, 4, …, 36 = 0.1 + 182.5.
	want := `{"_id": null,"c": {"$numberInt":"1360"},"b": {"$numberLong":"4611686018427388635"},` +
		`"m": {"$numberDecimal":"182.6"},"a": {"$numberDouble":"1.1529215046068472E+17"}}`
	for _, coll := range []*mongo.Collection{plain, sharded} {
		if got := diffAggRaw(t, coll, pipeline); len(got) != 1 || got[0] != want {
			t.Errorf("%s: %v\nwant %s", coll.Name(), got, want)
		}
	}
}

// diffDecimalOf parses a decimal128.
func diffDecimalOf(t *testing.T, s string) bson.Decimal128 {
	t.Helper()
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDifferentialMultikeyIndexSort: a sort on a field some documents hold arrays in sorts
// an array by its smallest element (largest when descending), whatever the filter, in
// MongoDB. An index on that field yields a document at the first key inside the filter's
// bounds instead, so MongoDB sorts in memory then (docs: "Use Indexes to Sort Query Results",
// multikey note); so does cleave, which records which index fields have held arrays.
func TestDifferentialMultikeyIndexSort(t *testing.T) {
	t.Parallel()
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "a"}, {Key: "v", Value: bson.A{10, -5}}, {Key: "seq", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "b"}, {Key: "v", Value: 0}, {Key: "seq", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: "c"}, {Key: "v", Value: 5}, {Key: "seq", Value: 3}},
		bson.D{{Key: "_id", Value: 4}, {Key: "k", Value: "d"}, {Key: "v", Value: bson.A{7, -9}}, {Key: "seq", Value: 4}},
	}
	plain, sharded := diffPair(t, docs, bson.D{{Key: "v", Value: 1}, {Key: "seq", Value: 1}})
	ids := func(coll *mongo.Collection) []int32 {
		t.Helper()
		cur, err := coll.Find(context.Background(), bson.D{{Key: "v", Value: bson.D{{Key: "$gt", Value: -1}}}},
			options.Find().SetSort(bson.D{{Key: "v", Value: 1}, {Key: "seq", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		var out []int32
		for cur.Next(context.Background()) {
			out = append(out, cur.Current.Lookup("_id").Int32())
		}
		return out
	}
	// Sort keys: _id 4 → -9, _id 1 → -5, _id 2 → 0, _id 3 → 5.
	want := "[4 1 2 3]"
	p, s := fmt.Sprint(ids(plain)), fmt.Sprint(ids(sharded))
	if p != want || s != want {
		t.Errorf("sort on a multikey field under bounds: unsharded %s, sharded %s, want %s", p, s, want)
	}
}
