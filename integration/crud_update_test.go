package integration

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// wrUpdateCase is one update and its documented outcome.
type wrUpdateCase struct {
	name     string
	seed     []string // documents before
	filter   string
	update   string // an operator document, a replacement, or a pipeline ("[...]")
	many     bool
	upsert   bool
	filters  []string // wrArrayFilters
	matched  int64
	modified int64
	want     []string // documents after, by _id
}

// wrUpdateCases come from the examples of MongoDB's update operator reference pages.
var wrUpdateCases = []wrUpdateCase{
	{name: "SetCreates", seed: []string{`{"_id": 1, "a": 1}`}, filter: `{"_id": 1}`,
		update: `{"$set": {"b": "x", "c.d": 2}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "a": 1, "b": "x", "c": {"d": 2}}`}},
	{name: "SetNoOp", seed: []string{`{"_id": 1, "a": 1}`}, filter: `{}`,
		update: `{"$set": {"a": 1}}`, matched: 1, modified: 0,
		want: []string{`{"_id": 1, "a": 1}`}},
	{name: "Unset", seed: []string{`{"_id": 1, "a": 1, "b": 2}`}, filter: `{}`,
		update: `{"$unset": {"b": "", "zz": ""}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "a": 1}`}},
	{name: "IncKeepsTypes", seed: []string{`{"_id": 1, "i": 1, "l": {"$numberLong": "5"}, "d": 1.5}`}, filter: `{}`,
		update: `{"$inc": {"i": 2, "l": 1, "d": 1, "n": -1}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "i": 3, "l": {"$numberLong": "6"}, "d": 2.5, "n": -1}`}},
	{name: "MulMissing", seed: []string{`{"_id": 1, "a": 2}`}, filter: `{}`,
		update: `{"$mul": {"a": 3, "b": 4}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "a": 6, "b": 0}`}},
	{name: "MinMax", seed: []string{`{"_id": 1, "lo": 5, "hi": 5}`}, filter: `{}`,
		update: `{"$min": {"lo": 3}, "$max": {"hi": 10}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "lo": 3, "hi": 10}`}},
	{name: "Rename", seed: []string{`{"_id": 1, "a": 1, "b": 2}`}, filter: `{}`,
		update: `{"$rename": {"a": "z"}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "b": 2, "z": 1}`}},
	{name: "PushEachSliceSort", seed: []string{`{"_id": 1, "s": [{"v": 3}, {"v": 1}]}`}, filter: `{}`,
		update: `{"$push": {"s": {"$each": [{"v": 2}, {"v": 5}], "$sort": {"v": -1}, "$slice": 3}}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "s": [{"v": 5}, {"v": 3}, {"v": 2}]}`}},
	{name: "PushPosition", seed: []string{`{"_id": 1, "a": [1, 2]}`}, filter: `{}`,
		update: `{"$push": {"a": {"$each": [9], "$position": 0}}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "a": [9, 1, 2]}`}},
	{name: "AddToSetExisting", seed: []string{`{"_id": 1, "a": [1, 2]}`}, filter: `{}`,
		update: `{"$addToSet": {"a": 2}}`, matched: 1, modified: 0,
		want: []string{`{"_id": 1, "a": [1, 2]}`}},
	{name: "AddToSetEach", seed: []string{`{"_id": 1, "a": [1, 2]}`}, filter: `{}`,
		update: `{"$addToSet": {"a": {"$each": [2, 3]}}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "a": [1, 2, 3]}`}},
	{name: "Pop", seed: []string{`{"_id": 1, "a": [1, 2, 3], "b": [1, 2, 3]}`}, filter: `{}`,
		update: `{"$pop": {"a": 1, "b": -1}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "a": [1, 2], "b": [2, 3]}`}},
	{name: "PullCondition", seed: []string{`{"_id": 1, "a": [1, 5, 2, 8]}`}, filter: `{}`,
		update: `{"$pull": {"a": {"$gte": 5}}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "a": [1, 2]}`}},
	{name: "PullAll", seed: []string{`{"_id": 1, "a": [0, 2, 5, 5, 1, 0]}`}, filter: `{}`,
		update: `{"$pullAll": {"a": [0, 5]}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "a": [2, 1]}`}},
	{name: "Bit", seed: []string{`{"_id": 1, "a": 13}`}, filter: `{}`,
		update: `{"$bit": {"a": {"and": 10}}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "a": 8}`}},
	{name: "SetOnInsertIgnoredOnUpdate", seed: []string{`{"_id": 1, "a": 1}`}, filter: `{}`,
		update: `{"$setOnInsert": {"b": 1}}`, upsert: true, matched: 1, modified: 0,
		want: []string{`{"_id": 1, "a": 1}`}},
	{name: "Positional", seed: []string{`{"_id": 1, "grades": [80, 85, 90]}`}, filter: `{"grades": 85}`,
		update: `{"$set": {"grades.$": 82}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "grades": [80, 82, 90]}`}},
	{name: "AllPositional", seed: []string{`{"_id": 1, "g": [1, 2]}`}, filter: `{}`,
		update: `{"$inc": {"g.$[]": 10}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "g": [11, 12]}`}},
	{name: "ArrayFilters", seed: []string{`{"_id": 1, "g": [95, 102, 90]}`, `{"_id": 2, "g": [98, 100, 102]}`},
		filter: `{}`, update: `{"$set": {"g.$[el]": 100}}`, filters: []string{`{"el": {"$gte": 100}}`}, many: true,
		matched: 2, modified: 2,
		want: []string{`{"_id": 1, "g": [95, 100, 90]}`, `{"_id": 2, "g": [98, 100, 100]}`}},
	{name: "Replacement", seed: []string{`{"_id": 1, "a": 1, "b": 2}`}, filter: `{"a": 1}`,
		update: `{"c": 3}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "c": 3}`}},
	{name: "ReplacementSame", seed: []string{`{"_id": 1, "a": 1}`}, filter: `{"a": 1}`,
		update: `{"_id": 1, "a": 1}`, matched: 1, modified: 0,
		want: []string{`{"_id": 1, "a": 1}`}},
	{name: "Multi", seed: []string{`{"_id": 1, "a": 1}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 1}`, `{"_id": 4, "a": 5}`},
		filter: `{"a": {"$lte": 2}}`, update: `{"$set": {"a": 2}}`, many: true, matched: 3, modified: 2,
		want: []string{`{"_id": 1, "a": 2}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 2}`, `{"_id": 4, "a": 5}`}},
	{name: "OneOfMany", seed: []string{`{"_id": 1, "a": 1}`, `{"_id": 2, "a": 1}`},
		filter: `{"a": 1}`, update: `{"$inc": {"a": 1}}`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "a": 2}`, `{"_id": 2, "a": 1}`}},
	{name: "NoMatch", seed: []string{`{"_id": 1, "a": 1}`}, filter: `{"a": 7}`,
		update: `{"$set": {"b": 1}}`, many: true, matched: 0, modified: 0,
		want: []string{`{"_id": 1, "a": 1}`}},
	{name: "Pipeline", seed: []string{`{"_id": 1, "a": 1, "b": 2}`, `{"_id": 2, "a": 5, "b": 7}`},
		filter: `{}`, update: `[{"$set": {"sum": {"$add": ["$a", "$b"]}}}, {"$unset": "b"}]`, many: true,
		matched: 2, modified: 2,
		want: []string{`{"_id": 1, "a": 1, "sum": 3}`, `{"_id": 2, "a": 5, "sum": 12}`}},
	{name: "PipelineNested", seed: []string{`{"_id": 1, "a": {"c": 2}}`}, filter: `{}`,
		update:  `[{"$set": {"a": {"b": {"$literal": "$x"}}, "d.e": {"$concat": ["p", "q"]}}}, {"$replaceWith": {"$mergeObjects": ["$$ROOT", {"r": 1}]}}]`,
		matched: 1, modified: 1,
		want: []string{`{"_id": 1, "a": {"c": 2, "b": "$x"}, "d": {"e": "pq"}, "r": 1}`}},
	{name: "PipelineReplaceRootKeepsID", seed: []string{`{"_id": 1, "x": 1, "t": {"u": {"v": 1}}}`}, filter: `{}`,
		update: `[{"$replaceRoot": {"newRoot": "$t"}}, {"$addFields": {"foo": 1}}]`, matched: 1, modified: 1,
		want: []string{`{"_id": 1, "u": {"v": 1}, "foo": 1}`}},
	{name: "LargeMulti", seed: wrManyDocs(600), filter: `{"i": {"$gte": 100}}`,
		update: `{"$inc": {"i": 1000}}`, many: true, matched: 500, modified: 500,
		want: nil},
}

// wrUpdateArg turns a case's update text into what the driver sends.
func wrUpdateArg(t *testing.T, s string) any {
	if strings.HasPrefix(strings.TrimSpace(s), "[") {
		var stages []bson.D
		if err := bson.UnmarshalExtJSON([]byte(`{"p": `+s+`}`), false, &struct{ P *[]bson.D }{&stages}); err != nil {
			t.Fatalf("bad pipeline %s: %v", s, err)
		}
		return stages
	}
	return wrJSON(t, s)
}

// TestUpdateOperators runs each operator example through updateOne/updateMany/replaceOne
// and checks matchedCount, modifiedCount and the documents after.
func TestUpdateOperators(t *testing.T) {
	t.Parallel()
	for _, tc := range wrUpdateCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := wrColl(t, "c", tc.seed...)
			ctx := context.Background()
			u := wrUpdateArg(t, tc.update)
			var res *mongo.UpdateResult
			var err error
			d, isDoc := u.(bson.D)
			switch {
			case isDoc && len(d) > 0 && !strings.HasPrefix(d[0].Key, "$"):
				res, err = c.ReplaceOne(ctx, wrJSON(t, tc.filter), u, options.Replace().SetUpsert(tc.upsert))
			case tc.many:
				o := options.UpdateMany().SetUpsert(tc.upsert)
				if tc.filters != nil {
					o.SetArrayFilters(wrArrayFilters(t, tc.filters))
				}
				res, err = c.UpdateMany(ctx, wrJSON(t, tc.filter), u, o)
			default:
				o := options.UpdateOne().SetUpsert(tc.upsert)
				if tc.filters != nil {
					o.SetArrayFilters(wrArrayFilters(t, tc.filters))
				}
				res, err = c.UpdateOne(ctx, wrJSON(t, tc.filter), u, o)
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.MatchedCount != tc.matched || res.ModifiedCount != tc.modified || res.UpsertedCount != 0 {
				t.Errorf("result = %+v, want matched %d modified %d", res, tc.matched, tc.modified)
			}
			if tc.want != nil {
				wrCheckDocs(t, c, tc.want...)
			}
		})
	}
}

// wrArrayFilters parses filters.
func wrArrayFilters(t *testing.T, filters []string) []any {
	out := make([]any, len(filters))
	for i, f := range filters {
		out[i] = wrJSON(t, f)
	}
	return out
}

// TestUpdateUpsert checks the documents upserts insert: seeded from the query's equality
// fields, $setOnInsert applied, _id taken from the query or generated.
func TestUpdateUpsert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("GeneratedID", func(t *testing.T) {
		t.Parallel()
		c := wrColl(t, "c")
		res, err := c.UpdateOne(ctx, wrJSON(t, `{"x": 5, "y": {"$gt": 1}, "z.w": 2}`),
			wrJSON(t, `{"$set": {"a": 1}, "$setOnInsert": {"created": true}}`), options.UpdateOne().SetUpsert(true))
		if err != nil {
			t.Fatal(err)
		}
		id, ok := res.UpsertedID.(bson.ObjectID)
		if !ok || res.MatchedCount != 0 || res.ModifiedCount != 0 || res.UpsertedCount != 1 {
			t.Fatalf("result = %+v", res)
		}
		var got bson.D
		if err := c.FindOne(ctx, bson.D{}).Decode(&got); err != nil {
			t.Fatal(err)
		}
		want := bson.D{{Key: "_id", Value: id}, {Key: "x", Value: int32(5)}, {Key: "z", Value: bson.D{{Key: "w", Value: int32(2)}}},
			{Key: "a", Value: int32(1)}, {Key: "created", Value: true}}
		if wrCanonical(t, got) != wrCanonical(t, want) {
			t.Errorf("upserted %v, want %v", got, want)
		}
	})
	t.Run("QueryID", func(t *testing.T) {
		t.Parallel()
		c := wrColl(t, "c")
		res, err := c.UpdateMany(ctx, wrJSON(t, `{"_id": 7}`), wrJSON(t, `{"$inc": {"n": 1}}`), options.UpdateMany().SetUpsert(true))
		if err != nil {
			t.Fatal(err)
		}
		if res.UpsertedID != int32(7) || res.UpsertedCount != 1 {
			t.Fatalf("result = %+v", res)
		}
		res, err = c.UpdateMany(ctx, wrJSON(t, `{"_id": 7}`), wrJSON(t, `{"$inc": {"n": 1}}`), options.UpdateMany().SetUpsert(true))
		if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 || res.UpsertedID != nil {
			t.Fatalf("second upsert: %+v, %v", res, err)
		}
		wrCheckDocs(t, c, `{"_id": 7, "n": 2}`)
	})
	t.Run("Replacement", func(t *testing.T) {
		t.Parallel()
		c := wrColl(t, "c")
		res, err := c.ReplaceOne(ctx, wrJSON(t, `{"_id": "k", "ignored": 1}`), wrJSON(t, `{"v": 1}`), options.Replace().SetUpsert(true))
		if err != nil || res.UpsertedID != "k" {
			t.Fatalf("result = %+v, %v", res, err)
		}
		wrCheckDocs(t, c, `{"_id": "k", "v": 1}`)
	})
	t.Run("RawReply", func(t *testing.T) {
		t.Parallel()
		c := wrColl(t, "c", `{"_id": 1}`)
		var reply bson.D
		err := c.Database().RunCommand(context.Background(), bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}},
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 2}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "upsert", Value: true}},
		}}}).Decode(&reply)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"n":{"$numberInt":"2"},"nModified":{"$numberInt":"1"},"upserted":[{"index":{"$numberInt":"1"},"_id":{"$numberInt":"2"}}],"ok":{"$numberDouble":"1.0"}}`
		if got := wrCanonical(t, reply); !strings.HasPrefix(got, want[:len(want)-1]) {
			t.Errorf("reply = %s\nwant %s", got, want)
		}
	})
}

// TestUpdateErrors checks MongoDB's codes and messages for bad updates: command-level
// errors for malformed statements, write errors for statements that fail.
func TestUpdateErrors(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1, "a": 1}`, `{"_id": 2, "a": "s"}`)
	db := c.Database()
	stmt := func(q, u string, extra ...bson.E) bson.D {
		d := bson.D{{Key: "q", Value: wrJSON(t, q)}, {Key: "u", Value: wrUpdateArg(t, u)}}
		return append(d, extra...)
	}
	upd := func(stmts ...bson.D) bson.D {
		a := bson.A{}
		for _, s := range stmts {
			a = append(a, s)
		}
		return bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: a}}
	}
	writeErrCases := []struct {
		name string
		stmt bson.D
		code int32
		msg  string
	}{
		{"MultiReplacement", stmt(`{}`, `{"a": 1}`, bson.E{Key: "multi", Value: true}), 9,
			"multi update is not supported for replacement-style update"},
		{"ModifyID", stmt(`{"_id": 1}`, `{"$set": {"_id": 5}}`), 66,
			"Performing an update on the path '_id' would modify the immutable field '_id'"},
		{"ReplaceID", stmt(`{"_id": 1}`, `{"_id": 5, "a": 1}`), 66, ""},
		{"UnknownModifier", stmt(`{}`, `{"$foo": {"a": 1}}`), 9, ""},
		{"IncString", stmt(`{"_id": 2}`, `{"$inc": {"a": 1}}`), 14, ""},
		{"BadHint", stmt(`{}`, `{"$set": {"b": 1}}`, bson.E{Key: "hint", Value: "nope"}), 2, ""},
		{"BadFilter", stmt(`{"a": {"$bogus": 1}}`, `{"$set": {"b": 1}}`), 2, ""},
		{"PositionalWithoutArray", stmt(`{}`, `{"$set": {"a.$": 1}}`), 2, ""},
	}
	for _, tc := range writeErrCases {
		reply := wrRun(t, db, upd(tc.stmt))
		we := wrFirstWriteError(t, reply)
		if we["index"] != int32(0) || we["code"] != tc.code || (tc.msg != "" && we["errmsg"] != tc.msg) {
			t.Errorf("%s: writeError = %v, want code %d %q", tc.name, we, tc.code, tc.msg)
		}
	}
	cmdCases := []struct {
		name string
		cmd  bson.D
		code int32
		msg  string
	}{
		{"MissingQ", upd(bson.D{{Key: "u", Value: bson.D{}}}), 40414, "BSON field 'update.updates.q' is missing but a required field"},
		{"MissingU", upd(bson.D{{Key: "q", Value: bson.D{}}}), 40414, "BSON field 'update.updates.u' is missing but a required field"},
		{"MissingUpdates", bson.D{{Key: "update", Value: "c"}}, 40414, "BSON field 'update.updates' is missing but a required field"},
		{"EmptyUpdates", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{}}}, 16,
			"Write batch sizes must be between 1 and 100000. Got 0 operations."},
		{"UnknownField", upd(stmt(`{}`, `{}`, bson.E{Key: "bogus", Value: 1})), 40415, "BSON field 'update.updates.bogus' is an unknown field."},
		{"BadUType", upd(bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: 1}}), 9, "Update argument must be either an object or an array"},
	}
	for _, tc := range cmdCases {
		ce := wrCmdError(t, db, tc.cmd)
		if ce.Code != tc.code || (tc.msg != "" && ce.Message != tc.msg) {
			t.Errorf("%s: error = %d %q, want %d %q", tc.name, ce.Code, ce.Message, tc.code, tc.msg)
		}
	}
	wrCheckDocs(t, c, `{"_id": 1, "a": 1}`, `{"_id": 2, "a": "s"}`)
}

// TestUpdateOrderedBatch checks that an ordered batch stops at the first failed statement
// and an unordered one runs every statement, reporting each failure with its index.
func TestUpdateOrderedBatch(t *testing.T) {
	t.Parallel()
	for _, ordered := range []bool{true, false} {
		name := "Unordered"
		if ordered {
			name = "Ordered"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := wrColl(t, "c", `{"_id": 1}`, `{"_id": 2}`, `{"_id": 3}`)
			models := []mongo.WriteModel{
				mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: 1}}).SetUpdate(wrJSON(t, `{"$set": {"a": 1}}`)),
				mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: 2}}).SetUpdate(wrJSON(t, `{"$set": {"_id": 9}}`)),
				mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: 3}}).SetUpdate(wrJSON(t, `{"$set": {"a": 3}}`)),
			}
			res, err := c.BulkWrite(context.Background(), models, options.BulkWrite().SetOrdered(ordered))
			var bwe mongo.BulkWriteException
			if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 {
				t.Fatalf("err = %v", err)
			}
			if we := bwe.WriteErrors[0]; we.Index != 1 || we.Code != 66 {
				t.Errorf("write error = %+v", we)
			}
			wantModified := int64(2)
			want := []string{`{"_id": 1, "a": 1}`, `{"_id": 2}`, `{"_id": 3, "a": 3}`}
			if ordered {
				wantModified = 1
				want[2] = `{"_id": 3}`
			}
			if res.ModifiedCount != wantModified {
				t.Errorf("modified = %d, want %d", res.ModifiedCount, wantModified)
			}
			wrCheckDocs(t, c, want...)
		})
	}
}

// TestUpdateConcurrentInc runs $inc from 10 clients 100 times each on one document: no
// update may be lost.
func TestUpdateConcurrentInc(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1, "n": 0}`, `{"_id": 2, "n": 0}`)
	srv := sharedServer(t)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for w := 0; w < 10; w++ {
		wg.Add(1)
		coll := srv.client(t).Database(dbName(t)).Collection("c")
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				res, err := coll.UpdateOne(context.Background(), bson.D{{Key: "_id", Value: 1}}, wrJSON(t, `{"$inc": {"n": 1}}`))
				if err == nil && res.ModifiedCount != 1 {
					err = errors.New("an $inc was not counted as a modification")
				}
				if err == nil && i%10 == 0 { // multi updates of every document, concurrently
					_, err = coll.UpdateMany(context.Background(), bson.D{}, wrJSON(t, `{"$inc": {"m": 1}}`))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wrCheckDocs(t, c, `{"_id": 1, "n": 1000, "m": 100}`, `{"_id": 2, "n": 0, "m": 100}`)
}

// TestUpdateConcurrentIncUniqueKey runs $inc by _id from 8 clients on a field with a
// unique index, and on another document's field to collide with: an update by _id reads its
// document under the _id's key lock alone, and one that changes a unique key needs that
// key's lock too, so it goes the general way (lock every key, read again). No update may be
// lost, and the one that collides fails with E11000 and changes nothing.
func TestUpdateConcurrentIncUniqueKey(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1, "u": 0}`, `{"_id": 2, "u": -1}`)
	ctx := context.Background()
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "u", Value: 1}},
		Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	srv := sharedServer(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		coll := srv.client(t).Database(dbName(t)).Collection("c")
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, wrJSON(t, `{"$inc": {"u": 1}}`))
				if err == nil && res.ModifiedCount != 1 {
					err = errors.New("an $inc was not counted as a modification")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	_, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, wrJSON(t, `{"$set": {"u": 400}}`))
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("setting a unique key another document holds: got %v, want E11000", err)
	}
	wrCheckDocs(t, c, `{"_id": 1, "u": 400}`, `{"_id": 2, "u": -1}`)
}

// TestUpdateConcurrentUpsert runs the same _id upsert from 10 clients at once: exactly one
// document is inserted and every other upsert updates it.
func TestUpdateConcurrentUpsert(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c")
	srv := sharedServer(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	upserts := 0
	for w := 0; w < 10; w++ {
		wg.Add(1)
		coll := srv.client(t).Database(dbName(t)).Collection("c")
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				res, err := coll.UpdateOne(context.Background(), bson.D{{Key: "_id", Value: i}},
					wrJSON(t, `{"$inc": {"n": 1}}`), options.UpdateOne().SetUpsert(true))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				upserts += int(res.UpsertedCount)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if upserts != 20 {
		t.Errorf("%d upserts, want 20", upserts)
	}
	want := make([]string, 20)
	for i := range want {
		want[i] = `{"_id": ` + wrItoa(i) + `, "n": 10}`
	}
	wrCheckDocs(t, c, want...)
}

// TestUpdateUniqueIndex checks E11000 write errors from updates and upserts, and that
// concurrent upserts on a unique key create one document.
func TestUpdateUniqueIndex(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1, "k": 1}`, `{"_id": 2, "k": 2}`)
	wrUniqueIndex(t, c, "k")
	ctx := context.Background()
	_, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, wrJSON(t, `{"$set": {"k": 1}}`))
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 ||
		!strings.Contains(we.WriteErrors[0].Message, "E11000 duplicate key error collection: "+dbName(t)+".c index: k_1 dup key: { k: 1 }") {
		t.Fatalf("err = %v", err)
	}
	// Swapping keys within one multi update hits the key the first document still holds.
	res, err := c.UpdateMany(ctx, bson.D{}, wrJSON(t, `{"$inc": {"k": 10}}`))
	if err != nil || res.ModifiedCount != 2 {
		t.Fatalf("updateMany: %+v %v", res, err)
	}
	srv := sharedServer(t)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		coll := srv.client(t).Database(dbName(t)).Collection("c")
		go func() {
			defer wg.Done()
			_, err := coll.UpdateOne(ctx, bson.D{{Key: "k", Value: 100}}, wrJSON(t, `{"$inc": {"n": 1}}`), options.UpdateOne().SetUpsert(true))
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	n, err := c.CountDocuments(ctx, bson.D{{Key: "k", Value: 100}})
	if err != nil || n != 1 {
		t.Fatalf("count = %d, %v", n, err)
	}
	var got struct{ N int32 }
	if err := c.FindOne(ctx, bson.D{{Key: "k", Value: 100}}).Decode(&got); err != nil || got.N != 8 {
		t.Errorf("n = %d, %v", got.N, err)
	}
}

// TestUpdateGenericArgs checks that updates accept the optional arguments drivers send:
// collation, hint, let, maxTimeMS, writeConcern.
func TestUpdateGenericArgs(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1}`)
	reply := wrRun(t, c.Database(), bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: wrJSON(t, `{"$set": {"a": 1}}`)},
			{Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}, {Key: "hint", Value: bson.D{{Key: "_id", Value: 1}}}}}},
		{Key: "let", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "bypassDocumentValidation", Value: true},
		{Key: "maxTimeMS", Value: 10000}, {Key: "ordered", Value: false},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}})
	if reply["n"] != int32(1) || reply["nModified"] != int32(1) {
		t.Errorf("reply = %v", reply)
	}
	res, err := c.UpdateOne(context.Background(), wrJSON(t, `{"$expr": {"$eq": ["$_id", "$$target"]}}`),
		wrJSON(t, `{"$set": {"b": 2}}`), options.UpdateOne().SetLet(bson.D{{Key: "target", Value: 1}}))
	if err != nil || res.ModifiedCount != 1 {
		t.Errorf("let: %+v %v", res, err)
	}
}

// TestUpdateShardedMovesDocuments updates the shard-key value of documents of a collection
// hashed over 4 shards: each document moves to its new partition and stays findable by
// its new key and by _id, and deletes and findAndModify find it there.
func TestUpdateShardedMovesDocuments(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "4")
	ctx := context.Background()
	client := srv.client(t)
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "s.c"},
		{Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 8}}).Err(); err != nil {
		t.Fatalf("shardCollection: %v", err)
	}
	c := client.Database("s").Collection("c")
	docs := make([]any, 200)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "n", Value: 0}}
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	res, err := c.UpdateMany(ctx, bson.D{}, wrJSON(t, `{"$inc": {"k": 1000, "n": 1}}`))
	if err != nil || res.MatchedCount != 200 || res.ModifiedCount != 200 {
		t.Fatalf("updateMany: %+v %v", res, err)
	}
	for _, i := range []int{0, 7, 199} {
		var got struct{ ID, K, N int32 }
		if err := c.FindOne(ctx, bson.D{{Key: "k", Value: 1000 + i}}).Decode(&got); err != nil || got.N != 1 {
			t.Errorf("find k=%d: %+v %v", 1000+i, got, err)
		}
		if n, err := c.CountDocuments(ctx, bson.D{{Key: "k", Value: i}}); err != nil || n != 0 {
			t.Errorf("old key %d still found: %d %v", i, n, err)
		}
	}
	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 200 {
		t.Fatalf("count = %d %v", n, err)
	}
	res, err = c.UpdateOne(ctx, bson.D{{Key: "k", Value: 1005}}, wrJSON(t, `{"$set": {"k": "moved"}}`))
	if err != nil || res.ModifiedCount != 1 {
		t.Fatalf("updateOne: %+v %v", res, err)
	}
	var got bson.M
	if err := c.FindOneAndUpdate(ctx, bson.D{{Key: "k", Value: "moved"}}, wrJSON(t, `{"$inc": {"n": 1}}`),
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&got); err != nil || got["n"] != int32(2) || got["_id"] != int32(5) {
		t.Fatalf("findAndModify: %v %v", got, err)
	}
	up, err := c.UpdateOne(ctx, bson.D{{Key: "k", Value: "fresh"}}, wrJSON(t, `{"$set": {"n": 9}}`), options.UpdateOne().SetUpsert(true))
	if err != nil || up.UpsertedCount != 1 {
		t.Fatalf("upsert: %+v %v", up, err)
	}
	del, err := c.DeleteMany(ctx, wrJSON(t, `{"n": {"$lte": 1}}`))
	if err != nil || del.DeletedCount != 199 {
		t.Fatalf("deleteMany: %+v %v", del, err)
	}
	for _, k := range []string{"moved", "fresh"} {
		if n, err := c.CountDocuments(ctx, bson.D{{Key: "k", Value: k}}); err != nil || n != 1 {
			t.Errorf("k=%s: %d %v", k, n, err)
		}
	}
	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Errorf("count = %d %v", n, err)
	}
}

// TestUpdateExplain checks that explaining an update, a delete or a findAndModify plans
// its read and writes nothing.
func TestUpdateExplain(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1, "a": 1}`)
	cmds := []bson.D{
		{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: wrJSON(t, `{"$set": {"a": 2}}`)}, {Key: "multi", Value: true}}}}},
		{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}}}}},
		{{Key: "findAndModify", Value: "c"}, {Key: "remove", Value: true}},
	}
	for _, cmd := range cmds {
		reply := wrRun(t, c.Database(), bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "executionStats"}})
		if _, ok := reply["queryPlanner"]; !ok {
			t.Errorf("explain %s: %v", cmd[0].Key, reply)
		}
	}
	wrCheckDocs(t, c, `{"_id": 1, "a": 1}`)
}
