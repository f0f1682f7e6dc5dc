package integration

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestFindAndModifyDriver runs the driver's findOneAndUpdate/Replace/Delete: sort picks the
// document, returnDocument chooses the image, projection shapes it.
func TestFindAndModifyDriver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := wrColl(t, "c", `{"_id": 1, "a": 1, "b": "x"}`, `{"_id": 2, "a": 5, "b": "y"}`, `{"_id": 3, "a": 3, "b": "z"}`)
	var got bson.D
	err := c.FindOneAndUpdate(ctx, bson.D{}, wrJSON(t, `{"$inc": {"a": 10}}`),
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "a", Value: -1}})).Decode(&got)
	if err != nil || wrCanonical(t, got) != wrCanonical(t, wrJSON(t, `{"_id": 2, "a": 5, "b": "y"}`)) {
		t.Fatalf("before image: %v %v", got, err)
	}
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 3}}, wrJSON(t, `{"$set": {"a": 4}}`),
		options.FindOneAndUpdate().SetReturnDocument(options.After).SetProjection(bson.D{{Key: "b", Value: 0}})).Decode(&got)
	if err != nil || wrCanonical(t, got) != wrCanonical(t, wrJSON(t, `{"_id": 3, "a": 4}`)) {
		t.Fatalf("after image: %v %v", got, err)
	}
	err = c.FindOneAndReplace(ctx, bson.D{{Key: "b", Value: "x"}}, wrJSON(t, `{"r": true}`),
		options.FindOneAndReplace().SetReturnDocument(options.After)).Decode(&got)
	if err != nil || wrCanonical(t, got) != wrCanonical(t, wrJSON(t, `{"_id": 1, "r": true}`)) {
		t.Fatalf("replace: %v %v", got, err)
	}
	err = c.FindOneAndDelete(ctx, wrJSON(t, `{"a": {"$exists": true}}`), options.FindOneAndDelete().SetSort(bson.D{{Key: "a", Value: 1}})).Decode(&got)
	if err != nil || wrCanonical(t, got) != wrCanonical(t, wrJSON(t, `{"_id": 3, "a": 4, "b": "z"}`)) {
		t.Fatalf("delete: %v %v", got, err)
	}
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "nope", Value: 1}}, wrJSON(t, `{"$set": {"a": 1}}`)).Err()
	if !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("no match: %v", err)
	}
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "k", Value: "new"}}, wrJSON(t, `{"$set": {"v": 1}}`),
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After).SetProjection(bson.D{{Key: "_id", Value: 0}})).Decode(&got)
	if err != nil || wrCanonical(t, got) != wrCanonical(t, wrJSON(t, `{"k": "new", "v": 1}`)) {
		t.Fatalf("upsert: %v %v", got, err)
	}
	if n, err := c.CountDocuments(ctx, bson.D{{Key: "k", Value: "new"}}); err != nil || n != 1 {
		t.Fatalf("upserted %d documents, %v", n, err)
	}
	if _, err := c.DeleteOne(ctx, bson.D{{Key: "k", Value: "new"}}); err != nil {
		t.Fatal(err)
	}
	wrCheckDocs(t, c, `{"_id": 1, "r": true}`, `{"_id": 2, "a": 15, "b": "y"}`)
}

// TestFindAndModifyReply checks the raw reply: value and lastErrorObject {n,
// updatedExisting, upserted} as MongoDB's findAndModify page shows them.
func TestFindAndModifyReply(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1, "a": 1}`)
	db := c.Database()
	fam := func(extra ...bson.E) bson.D {
		return append(bson.D{{Key: "findAndModify", Value: "c"}}, extra...)
	}
	cases := []struct {
		name string
		cmd  bson.D
		want string
	}{
		{"Updated", fam(bson.E{Key: "query", Value: bson.D{{Key: "_id", Value: 1}}}, bson.E{Key: "update", Value: wrJSON(t, `{"$inc": {"a": 1}}`)}),
			`{"lastErrorObject": {"n": 1, "updatedExisting": true}, "value": {"_id": 1, "a": 1}, "ok": 1.0}`},
		{"NoMatch", fam(bson.E{Key: "query", Value: bson.D{{Key: "_id", Value: 9}}}, bson.E{Key: "update", Value: wrJSON(t, `{"$inc": {"a": 1}}`)}),
			`{"lastErrorObject": {"n": 0, "updatedExisting": false}, "value": null, "ok": 1.0}`},
		{"Upserted", fam(bson.E{Key: "query", Value: bson.D{{Key: "_id", Value: 9}}}, bson.E{Key: "update", Value: wrJSON(t, `{"$inc": {"a": 1}}`)},
			bson.E{Key: "upsert", Value: true}),
			`{"lastErrorObject": {"n": 1, "updatedExisting": false, "upserted": 9}, "value": null, "ok": 1.0}`},
		{"UpsertedNew", fam(bson.E{Key: "query", Value: bson.D{{Key: "_id", Value: 10}}}, bson.E{Key: "update", Value: wrJSON(t, `{"$inc": {"a": 1}}`)},
			bson.E{Key: "upsert", Value: true}, bson.E{Key: "new", Value: true}),
			`{"lastErrorObject": {"n": 1, "updatedExisting": false, "upserted": 10}, "value": {"_id": 10, "a": 1}, "ok": 1.0}`},
		{"Removed", fam(bson.E{Key: "query", Value: bson.D{{Key: "_id", Value: 9}}}, bson.E{Key: "remove", Value: true}, bson.E{Key: "fields", Value: bson.D{{Key: "a", Value: 1}}}),
			`{"lastErrorObject": {"n": 1}, "value": {"_id": 9, "a": 1}, "ok": 1.0}`},
		{"RemovedNothing", fam(bson.E{Key: "query", Value: bson.D{{Key: "_id", Value: 9}}}, bson.E{Key: "remove", Value: true}),
			`{"lastErrorObject": {"n": 0}, "value": null, "ok": 1.0}`},
		{"NoOp", fam(bson.E{Key: "query", Value: bson.D{{Key: "_id", Value: 1}}}, bson.E{Key: "update", Value: wrJSON(t, `{"$set": {"a": 2}}`)}, bson.E{Key: "new", Value: true}),
			`{"lastErrorObject": {"n": 1, "updatedExisting": true}, "value": {"_id": 1, "a": 2}, "ok": 1.0}`},
		{"Pipeline", fam(bson.E{Key: "query", Value: bson.D{{Key: "_id", Value: 1}}}, bson.E{Key: "update", Value: bson.A{wrJSON(t, `{"$set": {"b": {"$multiply": ["$a", 2]}}}`)}},
			bson.E{Key: "new", Value: true}),
			`{"lastErrorObject": {"n": 1, "updatedExisting": true}, "value": {"_id": 1, "a": 2, "b": 4}, "ok": 1.0}`},
		{"MissingCollection", bson.D{{Key: "findAndModify", Value: "none"}, {Key: "remove", Value: true}},
			`{"lastErrorObject": {"n": 0}, "value": null, "ok": 1.0}`},
	}
	for _, tc := range cases {
		var got bson.D
		if err := db.RunCommand(context.Background(), tc.cmd).Decode(&got); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if g, w := wrCanonical(t, got), wrCanonical(t, wrJSON(t, tc.want)); g != w {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, g, w)
		}
	}
}

// TestFindAndModifyErrors checks the codes of refused findAndModify commands.
func TestFindAndModifyErrors(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1, "k": 1}`, `{"_id": 2, "k": 2}`)
	db := c.Database()
	upd := bson.E{Key: "update", Value: wrJSON(t, `{"$set": {"a": 1}}`)}
	cases := []struct {
		name string
		cmd  bson.D
		code int32
		msg  string
	}{
		{"Neither", bson.D{{Key: "findAndModify", Value: "c"}}, 9, "Either an update or remove=true must be specified"},
		{"Both", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "remove", Value: true}, upd}, 9, "Cannot specify both an update and remove=true"},
		{"RemoveNew", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "remove", Value: true}, {Key: "new", Value: true}}, 9,
			"Cannot specify both new=true and remove=true; 'remove' always returns the deleted document"},
		{"RemoveUpsert", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "remove", Value: true}, {Key: "upsert", Value: true}}, 9,
			"Cannot specify both upsert=true and remove=true"},
		{"ModifyID", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 1}}},
			{Key: "update", Value: wrJSON(t, `{"$set": {"_id": 3}}`)}}, 66,
			"Plan executor error during findAndModify :: caused by :: Performing an update on the path '_id' would modify the immutable field '_id'"},
		{"QueryType", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: 1}, upd}, 14, ""},
		{"BadSort", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "sort", Value: bson.D{{Key: "a", Value: 2}}}, upd}, 15975, ""},
		{"Unknown", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "bogus", Value: 1}, upd}, 40415,
			"BSON field 'findAndModify.bogus' is an unknown field."},
	}
	for _, tc := range cases {
		ce := wrCmdError(t, db, tc.cmd)
		if ce.Code != tc.code || (tc.msg != "" && ce.Message != tc.msg) {
			t.Errorf("%s: error = %d %q, want %d %q", tc.name, ce.Code, ce.Message, tc.code, tc.msg)
		}
	}
	wrUniqueIndex(t, c, "k")
	ce := wrCmdError(t, db, bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 2}}},
		{Key: "update", Value: wrJSON(t, `{"$set": {"k": 1}}`)}})
	if ce.Code != 11000 {
		t.Errorf("duplicate key: %v", ce)
	}
}

// TestFindAndModifyQueue takes jobs from a queue with findOneAndUpdate from several clients:
// each job is taken exactly once.
func TestFindAndModifyQueue(t *testing.T) {
	t.Parallel()
	docs := make([]string, 100)
	for i := range docs {
		docs[i] = `{"_id": ` + wrItoa(i) + `, "state": "new", "pri": ` + wrItoa(i%7) + `}`
	}
	wrColl(t, "q", docs...)
	srv := sharedServer(t)
	var mu sync.Mutex
	taken := map[int32]int{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		coll := srv.client(t).Database(dbName(t)).Collection("q")
		go func() {
			defer wg.Done()
			for {
				var job struct {
					ID int32 `bson:"_id"`
				}
				err := coll.FindOneAndUpdate(context.Background(), bson.D{{Key: "state", Value: "new"}},
					wrJSON(t, `{"$set": {"state": "taken"}}`), options.FindOneAndUpdate().SetSort(bson.D{{Key: "pri", Value: 1}})).Decode(&job)
				if errors.Is(err, mongo.ErrNoDocuments) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				taken[job.ID]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(taken) != 100 {
		t.Errorf("%d jobs taken, want 100", len(taken))
	}
	for id, n := range taken {
		if n != 1 {
			t.Errorf("job %d taken %d times", id, n)
		}
	}
}
