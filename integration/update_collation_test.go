package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// updateCollationCases are updates whose operators compare strings: each answer under a
// case-insensitive collation (strength 2) and under the simple one, which orders
// uppercase before lowercase ("B" < "a").
var updateCollationCases = []struct {
	name, doc, update string
	arrayFilter       string // arrayFilters' one filter, or ""
	collated, simple  string // the document after the update
}{
	{"AddToSetEqual", `{"_id": 1, "t": ["a"]}`, `{"$addToSet": {"t": "A"}}`, "",
		`{"_id": 1, "t": ["a"]}`, `{"_id": 1, "t": ["a", "A"]}`},
	{"AddToSetEachDeduplicated", `{"_id": 1, "t": []}`, `{"$addToSet": {"t": {"$each": ["x", "X"]}}}`, "",
		`{"_id": 1, "t": ["x"]}`, `{"_id": 1, "t": ["x", "X"]}`},
	{"PullEqual", `{"_id": 1, "t": ["a", "b"]}`, `{"$pull": {"t": "A"}}`, "",
		`{"_id": 1, "t": ["b"]}`, `{"_id": 1, "t": ["a", "b"]}`},
	{"PullCondition", `{"_id": 1, "t": ["a", "b", "c"]}`, `{"$pull": {"t": {"$lte": "B"}}}`, "",
		`{"_id": 1, "t": ["c"]}`, `{"_id": 1, "t": ["a", "b", "c"]}`},
	{"PullAll", `{"_id": 1, "t": ["a", "b"]}`, `{"$pullAll": {"t": ["B"]}}`, "",
		`{"_id": 1, "t": ["a"]}`, `{"_id": 1, "t": ["a", "b"]}`},
	{"Min", `{"_id": 1, "s": "a"}`, `{"$min": {"s": "B"}}`, "",
		`{"_id": 1, "s": "a"}`, `{"_id": 1, "s": "B"}`},
	{"Max", `{"_id": 1, "s": "a"}`, `{"$max": {"s": "B"}}`, "",
		`{"_id": 1, "s": "B"}`, `{"_id": 1, "s": "a"}`},
	{"PushSort", `{"_id": 1, "t": []}`, `{"$push": {"t": {"$each": ["b", "A", "C"], "$sort": 1}}}`, "",
		`{"_id": 1, "t": ["A", "b", "C"]}`, `{"_id": 1, "t": ["A", "C", "b"]}`},
	{"PushSortField", `{"_id": 1, "t": []}`, `{"$push": {"t": {"$each": [{"k": "b"}, {"k": "C"}], "$sort": {"k": -1}}}}`, "",
		`{"_id": 1, "t": [{"k": "C"}, {"k": "b"}]}`, `{"_id": 1, "t": [{"k": "b"}, {"k": "C"}]}`},
	{"ArrayFilters", `{"_id": 1, "t": ["a", "b"]}`, `{"$set": {"t.$[e]": "z"}}`, `{"e": "A"}`,
		`{"_id": 1, "t": ["z", "b"]}`, `{"_id": 1, "t": ["a", "b"]}`},
}

// TestUpdateCollationOperators checks that the update operators compare strings under the
// collation, as MongoDB's update nodes do (setCollator): the collection's default one, the
// operation's own, and findAndModify's; without one they compare bytewise.
func TestUpdateCollationOperators(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if err := db.CreateCollection(ctx, "dflt", options.CreateCollection().SetCollation(strength2)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range updateCollationCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, run := range []struct {
				what, coll string
				opColl     *options.Collation
				fam        bool
				want       string
			}{
				{"CollectionDefault", "dflt", nil, false, tc.collated},
				{"Operation", "plain", strength2, false, tc.collated},
				{"FindAndModify", "plain", strength2, true, tc.collated},
				{"Simple", "plain", nil, false, tc.simple},
			} {
				c := db.Collection(run.coll)
				if _, err := c.DeleteMany(ctx, bson.D{}); err != nil {
					t.Fatal(err)
				}
				if _, err := c.InsertOne(ctx, wrJSON(t, tc.doc)); err != nil {
					t.Fatal(err)
				}
				if err := collatedUpdate(c, tc.update, tc.arrayFilter, run.opColl, run.fam); err != nil {
					t.Fatalf("%s: %v", run.what, err)
				}
				var got bson.D
				if err := c.FindOne(ctx, bson.D{}).Decode(&got); err != nil {
					t.Fatal(err)
				}
				if g, w := wrCanonical(t, got), wrCanonical(t, wrJSON(t, run.want)); g != w {
					t.Errorf("%s: got %s, want %s", run.what, g, w)
				}
			}
		})
	}
}

// collatedUpdate applies update (Extended JSON) to c's one document with an updateOne or a
// findOneAndUpdate, with arrayFilter (when not "") and collation coll (when not nil).
func collatedUpdate(c *mongo.Collection, update, arrayFilter string, coll *options.Collation, fam bool) error {
	var u bson.D
	if err := bson.UnmarshalExtJSON([]byte(update), false, &u); err != nil {
		return err
	}
	var filters []any
	if arrayFilter != "" {
		var f bson.D
		if err := bson.UnmarshalExtJSON([]byte(arrayFilter), false, &f); err != nil {
			return err
		}
		filters = []any{f}
	}
	if fam {
		o := options.FindOneAndUpdate().SetCollation(coll)
		if filters != nil {
			o.SetArrayFilters(filters)
		}
		return c.FindOneAndUpdate(context.Background(), bson.D{}, u, o).Err()
	}
	o := options.UpdateOne()
	if coll != nil {
		o.SetCollation(coll)
	}
	if filters != nil {
		o.SetArrayFilters(filters)
	}
	_, err := c.UpdateOne(context.Background(), bson.D{}, u, o)
	return err
}
