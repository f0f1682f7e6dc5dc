package integration

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestDeleteOneAndMany checks deleteOne (limit 1), deleteMany (limit 0) and their counts.
func TestDeleteOneAndMany(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := wrColl(t, "c", `{"_id": 1, "a": 1}`, `{"_id": 2, "a": 1}`, `{"_id": 3, "a": 2}`, `{"_id": 4, "a": 3}`)
	res, err := c.DeleteOne(ctx, bson.D{{Key: "a", Value: 1}})
	if err != nil || res.DeletedCount != 1 {
		t.Fatalf("deleteOne: %+v %v", res, err)
	}
	res, err = c.DeleteMany(ctx, wrJSON(t, `{"a": {"$lte": 2}}`))
	if err != nil || res.DeletedCount != 2 {
		t.Fatalf("deleteMany: %+v %v", res, err)
	}
	res, err = c.DeleteMany(ctx, bson.D{{Key: "a", Value: 99}})
	if err != nil || res.DeletedCount != 0 {
		t.Fatalf("deleteMany no match: %+v %v", res, err)
	}
	wrCheckDocs(t, c, `{"_id": 4, "a": 3}`)
	res, err = c.DeleteMany(ctx, bson.D{})
	if err != nil || res.DeletedCount != 1 {
		t.Fatalf("deleteMany all: %+v %v", res, err)
	}
	wrCheckDocs(t, c)
	// A collection that does not exist deletes nothing.
	res, err = c.Database().Collection("none").DeleteMany(ctx, bson.D{})
	if err != nil || res.DeletedCount != 0 {
		t.Fatalf("deleteMany missing collection: %+v %v", res, err)
	}
}

// TestDeleteLarge deletes more documents than one write group holds, through an index-less
// filter and by _id lists.
func TestDeleteLarge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := wrColl(t, "c", wrManyDocs(1000)...)
	res, err := c.DeleteMany(ctx, wrJSON(t, `{"i": {"$mod": [2, 0]}}`))
	if err != nil || res.DeletedCount != 500 {
		t.Fatalf("deleteMany: %+v %v", res, err)
	}
	res, err = c.DeleteMany(ctx, wrJSON(t, `{"_id": {"$in": [1, 2, 3, 5, 1001]}}`))
	if err != nil || res.DeletedCount != 3 {
		t.Fatalf("deleteMany $in: %+v %v", res, err)
	}
	n, err := c.CountDocuments(ctx, bson.D{})
	if err != nil || n != 497 {
		t.Fatalf("count = %d %v", n, err)
	}
}

// TestDeleteErrors checks the codes of bad delete statements.
func TestDeleteErrors(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1}`)
	db := c.Database()
	del := func(stmt bson.D) bson.D {
		return bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{stmt}}}
	}
	cmdCases := []struct {
		name string
		cmd  bson.D
		code int32
		msg  string
	}{
		{"LimitTwo", del(bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 2}}), 9,
			"The limit field in delete objects must be 0 or 1. Got 2"},
		{"MissingQ", del(bson.D{{Key: "limit", Value: 0}}), 40414, "BSON field 'delete.deletes.q' is missing but a required field"},
		{"MissingLimit", del(bson.D{{Key: "q", Value: bson.D{}}}), 40414, "BSON field 'delete.deletes.limit' is missing but a required field"},
		{"MissingDeletes", bson.D{{Key: "delete", Value: "c"}}, 40414, "BSON field 'delete.deletes' is missing but a required field"},
		{"UnknownField", del(bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}, {Key: "x", Value: 1}}), 40415,
			"BSON field 'delete.deletes.x' is an unknown field."},
		{"QNotObject", del(bson.D{{Key: "q", Value: 1}, {Key: "limit", Value: 0}}), 14, ""},
	}
	for _, tc := range cmdCases {
		ce := wrCmdError(t, db, tc.cmd)
		if ce.Code != tc.code || (tc.msg != "" && ce.Message != tc.msg) {
			t.Errorf("%s: error = %d %q, want %d %q", tc.name, ce.Code, ce.Message, tc.code, tc.msg)
		}
	}
	we := wrFirstWriteError(t, wrRun(t, db, del(bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}, {Key: "hint", Value: "nope"}})))
	if we["code"] != int32(2) {
		t.Errorf("bad hint: %v", we)
	}
	wrCheckDocs(t, c, `{"_id": 1}`)
}

// TestDeleteOrderedBatch checks write errors of ordered and unordered delete batches.
func TestDeleteOrderedBatch(t *testing.T) {
	t.Parallel()
	for _, ordered := range []bool{true, false} {
		c := wrColl(t, map[bool]string{true: "o", false: "u"}[ordered], `{"_id": 1}`, `{"_id": 2}`)
		reply := wrRun(t, c.Database(), bson.D{{Key: "delete", Value: c.Name()}, {Key: "deletes", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 1}},
			bson.D{{Key: "q", Value: wrJSON(t, `{"_id": {"$bad": 1}}`)}, {Key: "limit", Value: 1}},
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 2}}}, {Key: "limit", Value: 1}},
		}}, {Key: "ordered", Value: ordered}})
		we := wrFirstWriteError(t, reply)
		wantN := int32(2)
		if ordered {
			wantN = 1
		}
		if reply["n"] != wantN || we["index"] != int32(1) || we["code"] != int32(2) {
			t.Errorf("ordered=%v: reply = %v", ordered, reply)
		}
	}
}

// TestDeleteConcurrent runs deleteOne from several clients until the collection is empty:
// every document is deleted exactly once.
func TestDeleteConcurrent(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", wrManyDocs(200)...)
	srv := sharedServer(t)
	var deleted atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		coll := srv.client(t).Database(dbName(t)).Collection("c")
		go func() {
			defer wg.Done()
			for {
				res, err := coll.DeleteOne(context.Background(), bson.D{}, options.DeleteOne())
				if err != nil {
					t.Error(err)
					return
				}
				if res.DeletedCount == 0 {
					return
				}
				deleted.Add(res.DeletedCount)
			}
		}()
	}
	wg.Wait()
	if deleted.Load() != 200 {
		t.Errorf("deleted %d, want 200", deleted.Load())
	}
	wrCheckDocs(t, c)
}

// TestDeleteUnacknowledged checks that a w:0 delete is applied.
func TestDeleteUnacknowledged(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1}`, `{"_id": 2}`)
	reply := wrRun(t, c.Database(), bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 0}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}},
	}}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}, {Key: "j", Value: false}}}})
	if reply["n"] != int32(1) {
		t.Errorf("reply = %v", reply)
	}
	res, err := c.DeleteOne(context.Background(), bson.D{{Key: "_id", Value: 2}}, options.DeleteOne().SetCollation(&options.Collation{Locale: "fr"}))
	if err != nil || res.DeletedCount != 1 {
		t.Errorf("delete with collation fr: %v, %+v", err, res)
	}
	wrCheckDocs(t, c)
}
