package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// findDocs runs a find and returns the documents as extended JSON, one string each.
func findDocs(t *testing.T, c *mongo.Collection, filter any, opts *options.FindOptionsBuilder) []string {
	t.Helper()
	cur, err := c.Find(context.Background(), filter, opts)
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	var raw []bson.Raw
	if err := cur.All(context.Background(), &raw); err != nil {
		t.Fatalf("find: %v", err)
	}
	out := make([]string, len(raw))
	for i, r := range raw {
		out[i] = r.String()
	}
	return out
}

func TestFindReturnKeyShowRecordID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedServer(t).client(t).Database(dbName(t)).Collection("c")
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1.5}, {Key: "b", Value: "x"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: int32(2)}, {Key: "b", Value: "y"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: bson.A{int64(7), 3}}, {Key: "b", Value: "z"}},
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		filter bson.D
		opts   *options.FindOptionsBuilder
		want   string
	}{
		{"IndexKeysKeepTheirType", bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 1}}}},
			options.Find().SetReturnKey(true).SetSort(bson.D{{Key: "a", Value: 1}}),
			`[{"a": {"$numberDouble":"1.5"},"b": "x"} {"a": {"$numberInt":"2"},"b": "y"} {"a": {"$numberInt":"3"},"b": "z"}]`},
		{"MultikeyUsesTheKeyInRange", bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 5}}}},
			options.Find().SetReturnKey(true),
			`[{"a": {"$numberLong":"7"},"b": "z"}]`},
		{"IDIndexForAnIDSort", nil,
			options.Find().SetReturnKey(true).SetShowRecordID(true).SetSort(bson.D{{Key: "_id", Value: -1}}).SetLimit(2),
			`[{"_id": {"$numberInt":"3"}} {"_id": {"$numberInt":"2"}}]`},
		{"CollectionScanGivesEmptyKeys", bson.D{{Key: "b", Value: "x"}},
			options.Find().SetReturnKey(true).SetProjection(bson.D{{Key: "b", Value: 1}}),
			`[{}]`},
		{"MinMaxOnHintedIndex", nil,
			options.Find().SetReturnKey(true).SetHint(bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}).
				SetMin(bson.D{{Key: "a", Value: 2}, {Key: "b", Value: bson.MaxKey{}}}).
				SetMax(bson.D{{Key: "a", Value: 5}, {Key: "b", Value: bson.MaxKey{}}}),
			`[{"a": {"$numberInt":"2"},"b": "y"} {"a": {"$numberInt":"3"},"b": "z"}]`},
	}
	for _, tc := range cases {
		filter := tc.filter
		if filter == nil {
			filter = bson.D{}
		}
		if got := fmt.Sprint(findDocs(t, c, filter, tc.opts)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}

	// showRecordId appends a NumberLong $recordId after the projection, the same for a
	// document every time.
	opts := options.Find().SetShowRecordID(true).SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "b", Value: 1}}).
		SetSort(bson.D{{Key: "_id", Value: 1}})
	first := findRecordIDs(t, c, opts)
	if len(first) != 3 || first[0] == first[1] || first[1] == first[2] {
		t.Fatalf("record ids = %v", first)
	}
	if again := findRecordIDs(t, c, opts); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Errorf("record ids changed: %v then %v", first, again)
	}
}

// findRecordIDs runs a showRecordId find projected on b and returns the $recordId values.
func findRecordIDs(t *testing.T, c *mongo.Collection, opts *options.FindOptionsBuilder) []int64 {
	t.Helper()
	cur, err := c.Find(context.Background(), bson.D{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.D
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, d := range docs {
		if len(d) != 2 || d[0].Key != "b" || d[1].Key != "$recordId" {
			t.Fatalf("document = %v, want {b, $recordId}", d)
		}
		id, ok := d[1].Value.(int64)
		if !ok || id < 0 {
			t.Fatalf("$recordId = %#v, want a non-negative int64", d[1].Value)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestFindMinMaxErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedServer(t).client(t).Database(dbName(t)).Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opts *options.FindOptionsBuilder
		code int32
	}{
		{"NoHint", options.Find().SetMin(bson.D{{Key: "_id", Value: 0}}), 51173},
		{"OtherFields", options.Find().SetHint("_id_").SetMin(bson.D{{Key: "a", Value: 0}}), 51174},
		{"MinNotBeforeMax", options.Find().SetHint("_id_").SetMin(bson.D{{Key: "_id", Value: 5}}).
			SetMax(bson.D{{Key: "_id", Value: 5}}), 51175},
	}
	for _, tc := range cases {
		_, err := c.Find(ctx, bson.D{}, tc.opts)
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%s: error = %v, want code %d", tc.name, err, tc.code)
		}
	}
}

// TestSearchIndexCommandsArguments checks the search index commands' argument errors, and
// that an Atlas Search (full-text) index is refused naming Atlas (vector search indexes are
// TestVectorSearchIndexCommands').
func TestSearchIndexCommandsArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	model := mongo.SearchIndexModel{Definition: bson.D{{Key: "mappings", Value: bson.D{{Key: "dynamic", Value: true}}}}}
	_, err := c.SearchIndexes().CreateOne(ctx, model)
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 238 || !strings.Contains(ce.Message, "Atlas Search indexes") {
		t.Fatalf("createSearchIndexes: %#v", err)
	}
	// Arguments are parsed first.
	_, err = runCmd(t, db, bson.D{{Key: "createSearchIndexes", Value: "c"}})
	if !hasCode(err, 40414) {
		t.Errorf("createSearchIndexes without indexes: %v", err)
	}
	_, err = runCmd(t, db, bson.D{{Key: "updateSearchIndex", Value: "c"}, {Key: "name", Value: 1}, {Key: "definition", Value: bson.D{}}})
	if !hasCode(err, 14) {
		t.Errorf("updateSearchIndex with a numeric name: %v", err)
	}
	_, err = runCmd(t, db, bson.D{{Key: "dropSearchIndex", Value: "c"}, {Key: "name", Value: "a"}, {Key: "id", Value: "b"}})
	if !hasCode(err, 72) {
		t.Errorf("dropSearchIndex with a name and an id: %v", err)
	}
}

// TestFindProjectionIDOnly: {_id: 1} alone is an inclusion projection (only _id comes back),
// {_id: 0} alone an exclusion, through find and findAndModify.
func TestFindProjectionIDOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedServer(t).client(t).Database(dbName(t)).Collection("p")
	if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 2}, {Key: "b", Value: "x"}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		proj bson.D
		want string
	}{
		{bson.D{{Key: "_id", Value: 1}}, `{"_id": {"$numberInt":"1"}}`},
		{bson.D{{Key: "_id", Value: true}}, `{"_id": {"$numberInt":"1"}}`},
		{bson.D{{Key: "_id", Value: 0}}, `{"a": {"$numberInt":"2"},"b": "x"}`},
	} {
		got := findDocs(t, c, bson.D{}, options.Find().SetProjection(tc.proj))
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("find projection %v: %v, want %s", tc.proj, got, tc.want)
		}
	}
	res := c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 3}}}},
		options.FindOneAndUpdate().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	raw, err := res.Raw()
	if err != nil || raw.String() != `{"_id": {"$numberInt":"1"}}` {
		t.Errorf("findAndModify fields {_id: 1}: %s, %v", raw, err)
	}
}
