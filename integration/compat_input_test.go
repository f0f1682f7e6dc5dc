package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestUpdateCompatEmptyOperator: as in MongoDB 5.0+, an empty operator document ({$set:
// {}}) changes nothing and the update's other operators apply, in update, findAndModify and
// bulk writes (Mongoose's save() sends {$set: {}, $unset: {...}}); an update made only of
// empty operators matches and modifies nothing.
func TestUpdateCompatEmptyOperator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := wrColl(t, "c", `{"_id": 1, "a": 1, "metadata": 1}`, `{"_id": 2, "a": 2, "metadata": 2}`, `{"_id": 3, "a": 3, "metadata": 3}`)
	mongoose := bson.D{{Key: "$set", Value: bson.D{}}, {Key: "$unset", Value: bson.D{{Key: "metadata", Value: 1}}}}
	res, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, mongoose)
	if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
		t.Fatalf("update: %+v, %v", res, err)
	}
	var got bson.D
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 2}}, mongoose, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&got)
	if err != nil || wrCanonical(t, got) != `{"_id":{"$numberInt":"2"},"a":{"$numberInt":"2"}}` {
		t.Fatalf("findAndModify: %v, %v", got, err)
	}
	bw, err := c.BulkWrite(ctx, []mongo.WriteModel{mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: 3}}).SetUpdate(mongoose)})
	if err != nil || bw.ModifiedCount != 1 {
		t.Fatalf("bulk write: %+v, %v", bw, err)
	}
	res, err = c.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{}}})
	if err != nil || res.MatchedCount != 3 || res.ModifiedCount != 0 {
		t.Fatalf("update of empty operators only: %+v, %v", res, err)
	}
	wrCheckDocs(t, c, `{"_id": 1, "a": 1}`, `{"_id": 2, "a": 2}`, `{"_id": 3, "a": 3}`)
}

// TestCreateIndexesCompatRefusals: createIndexes refuses a spec without a name
// (FailedToParse) and the same index twice in one command: IndexAlreadyExists on an empty
// collection (mongod creates them one by one), OperationFailed from the build over
// documents; nothing is created.
func TestCreateIndexesCompatRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	create := func(coll string, specs ...bson.D) error {
		a := bson.A{}
		for _, s := range specs {
			a = append(a, s)
		}
		return db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: a}}).Err()
	}
	v1 := bson.D{{Key: "key", Value: bson.D{{Key: "v", Value: 1}}}, {Key: "name", Value: "v_1"}}
	ce := wantCodeName(t, create("c", bson.D{{Key: "key", Value: bson.D{{Key: "v", Value: 1}}}}), 9, "FailedToParse")
	if want := "Error in specification { key: { v: 1 } } :: caused by :: The 'name' field is a required property of an index specification"; ce.Message != want {
		t.Errorf("no name: message %q, want %q", ce.Message, want)
	}
	ce = wantCodeName(t, create("empty", v1, v1), 68, "IndexAlreadyExists")
	if ce.Message != "Identical index already exists: v_1" {
		t.Errorf("twice on an empty collection: message %q", ce.Message)
	}
	if _, err := db.Collection("full").InsertOne(ctx, bson.D{{Key: "v", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	ce = wantCodeName(t, create("full", v1, v1), 96, "OperationFailed")
	if !strings.HasPrefix(ce.Message, "Index build failed: ") ||
		!strings.HasSuffix(ce.Message, " :: caused by :: Cannot build two identical indexes. Try again without duplicate indexes.") {
		t.Errorf("twice over documents: message %q", ce.Message)
	}
	if specs := indexSpecs(t, db.Collection("full")); len(specs) != 1 {
		t.Errorf("indexes after the refusals: %v", specs)
	}
}

// TestUpdateCompatPipelineUnsetTwice: a $unset stage naming a path twice, in an update
// pipeline or an aggregation, is a path collision (31250), as in MongoDB.
func TestUpdateCompatPipelineUnsetTwice(t *testing.T) {
	t.Parallel()
	c := wrColl(t, "c", `{"_id": 1, "v": 1}`)
	_, err := c.UpdateOne(context.Background(), bson.D{}, bson.A{bson.D{{Key: "$unset", Value: bson.A{"v", "v"}}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 31250 ||
		we.WriteErrors[0].Message != "Invalid $unset :: caused by :: Path collision at v" {
		t.Fatalf("got %v, want write error 31250 Path collision at v", err)
	}
	_, err = c.Aggregate(context.Background(), bson.A{bson.D{{Key: "$unset", Value: bson.A{"v", "v"}}}})
	if ce := wantCodeName(t, err, 31250, "Location31250"); ce.Message != "Invalid $unset :: caused by :: Path collision at v" {
		t.Errorf("aggregate: message %q", ce.Message)
	}
}

// TestHelloCompatSaslSupportedMechsUser: saslSupportedMechs names a user as "db.user"; a name
// without the dot is BadValue, as mongod's UserName::parse answers.
func TestHelloCompatSaslSupportedMechsUser(t *testing.T) {
	t.Parallel()
	admin := sharedServer(t).client(t).Database("admin")
	err := admin.RunCommand(context.Background(), bson.D{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: "admin"}}).Err()
	ce := wantCodeName(t, err, 2, "BadValue")
	if ce.Message != "UserName must contain a '.' separated database.user pair" {
		t.Errorf("message %q", ce.Message)
	}
	if err := admin.RunCommand(context.Background(), bson.D{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: "admin.nobody"}}).Err(); err != nil {
		t.Errorf("db.user: %v", err)
	}
}

// TestCommandCompatNullOptional: an optional argument set to null is absent, as MongoDB's
// IDL parser takes it, in every command: none of these fails, and create ignores max: null.
func TestCommandCompatNullOptional(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	null := func(keys ...string) bson.D {
		d := bson.D{}
		for _, k := range keys {
			d = append(d, bson.E{Key: k, Value: nil})
		}
		return d
	}
	with := func(cmd bson.D, keys ...string) bson.D { return append(cmd, null(keys...)...) }
	upd := bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}}}
	del := bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 99}}}, {Key: "limit", Value: 0}}
	cases := []struct {
		name string
		cmd  bson.D
	}{
		{"CreateCappedMax", with(bson.D{{Key: "create", Value: "capped"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}},
			"max", "validator", "validationLevel", "validationAction", "collation", "storageEngine", "indexOptionDefaults")},
		{"Find", with(bson.D{{Key: "find", Value: "c"}}, "filter", "sort", "projection", "skip", "limit", "batchSize",
			"let", "collation", "min", "max")},
		{"Aggregate", with(bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}},
			"let", "collation")},
		{"Count", with(bson.D{{Key: "count", Value: "c"}}, "query", "skip", "limit", "collation")},
		{"Distinct", with(bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "a"}}, "query", "collation")},
		{"Insert", with(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "a", Value: 2}}}}},
			"ordered", "bypassDocumentValidation", "let")},
		{"Update", with(bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{append(upd, null("upsert", "multi", "arrayFilters", "collation", "c")...)}}},
			"ordered", "bypassDocumentValidation", "let")},
		{"Delete", with(bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{append(del, null("collation")...)}}},
			"ordered", "let")},
		{"FindAndModify", with(bson.D{{Key: "findAndModify", Value: "c"}, {Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "f", Value: 1}}}}}},
			"query", "sort", "fields", "collation", "let", "arrayFilters")},
		{"CreateIndexes", with(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}}}},
			"commitQuorum", "ignoreUnknownIndexOptions")},
		{"ListCollections", with(bson.D{{Key: "listCollections", Value: 1}}, "filter", "nameOnly", "cursor")},
		{"ListIndexes", with(bson.D{{Key: "listIndexes", Value: "c"}}, "cursor")},
		{"CollMod", with(bson.D{{Key: "collMod", Value: "c"}}, "validator", "validationLevel", "validationAction")},
		{"Validate", with(bson.D{{Key: "validate", Value: "c"}}, "full")},
		{"Explain", with(bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}}}}, "verbosity")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := db.RunCommand(ctx, tc.cmd).Err(); err != nil {
				t.Fatalf("%v: %v", tc.cmd, err)
			}
		})
	}
	var info bson.Raw
	if err := db.RunCommand(ctx, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: "capped"}}}}).Decode(&info); err != nil {
		t.Fatal(err)
	}
	if opts := info.Lookup("cursor", "firstBatch", "0", "options"); opts.String() != `{"capped": true,"size": {"$numberInt":"4096"}}` {
		t.Errorf("capped collection's options %s, want capped and size only", opts)
	}
}
