package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestCreateIndexesHidden: an index created with hidden: true is built and listed with
// hidden, never planned with (nor usable as a hint), maintained, and becomes usable once
// collMod unhides it; hidden must be a bool and the _id index cannot be hidden.
func TestCreateIndexesHidden(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "a", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}, Options: options.Index().SetHidden(true)})
	if err != nil {
		t.Fatal(err)
	}
	if s := indexSpecs(t, c)["a_1"]; s["hidden"] != true {
		t.Fatalf("listIndexes: %v", s)
	}
	if plan := explainFind(t, c, bson.D{{Key: "a", Value: 1}}); strings.Contains(plan, "IXSCAN") {
		t.Fatalf("hidden index planned: %s", plan)
	}
	err = c.FindOne(ctx, bson.D{{Key: "a", Value: 1}}, options.FindOne().SetHint("a_1")).Err()
	_ = wantCodeName(t, err, 2, "BadValue")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "a", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	if _, err := collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "hidden", Value: false}}}); err != nil {
		t.Fatal(err)
	}
	if plan := explainFind(t, c, bson.D{{Key: "a", Value: 3}}); !strings.Contains(plan, "IXSCAN") {
		t.Fatalf("unhidden index not planned: %s", plan)
	}
	if n, err := c.CountDocuments(ctx, bson.D{{Key: "a", Value: 3}}, options.Count().SetHint("a_1")); err != nil || n != 1 {
		t.Fatalf("count through the unhidden index = %d, %v", n, err)
	}
	create := func(spec bson.D) error {
		return db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{spec}}}).Err()
	}
	ce := wantCodeName(t, create(bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}, {Key: "hidden", Value: 1}}),
		14, "TypeMismatch")
	if ce.Message != "The field 'name' must be a bool, but got int" { // sic: MongoDB's message
		t.Errorf("message %q", ce.Message)
	}
	ce = wantCodeName(t, create(bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "name", Value: "_id_"}, {Key: "hidden", Value: true}}),
		2, "BadValue")
	if ce.Message != "can't hide _id index" {
		t.Errorf("message %q", ce.Message)
	}
}

// TestHelloClientMetadataImmutable: the client metadata document may only come with a
// connection's first hello (the driver's handshake); a later hello carrying one fails
// with ClientMetadataCannotBeMutated, one without it still answers.
func TestHelloClientMetadataImmutable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database("admin")
	meta := bson.D{{Key: "driver", Value: bson.D{{Key: "name", Value: "x"}, {Key: "version", Value: "1"}}},
		{Key: "os", Value: bson.D{{Key: "type", Value: "linux"}}}}
	for _, name := range []string{"hello", "isMaster"} {
		err := db.RunCommand(ctx, bson.D{{Key: name, Value: 1}, {Key: "client", Value: meta}}).Err()
		ce := wantCodeName(t, err, 186, "ClientMetadataCannotBeMutated")
		if ce.Message != "The client metadata document may only be sent in the first hello" {
			t.Errorf("%s: message %q", name, ce.Message)
		}
		if err := db.RunCommand(ctx, bson.D{{Key: name, Value: 1}}).Err(); err != nil {
			t.Errorf("%s without metadata: %v", name, err)
		}
	}
}

// TestAPIStrict: a client declaring the Stable API version 1 with strict: true may run the
// commands of version 1 and gets APIStrictError (323) for any other command or aggregation
// stage; a version other than "1" answers APIVersionError (322).
func TestAPIStrict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := sharedServer(t)
	api := options.ServerAPI(options.ServerAPIVersion1).SetStrict(true)
	db := srv.client(t, options.Client().SetServerAPIOptions(api)).Database(dbName(t))
	c := db.Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatalf("insert under apiStrict: %v", err)
	}
	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("countDocuments under apiStrict: %d %v", n, err)
	}
	err := c.Distinct(ctx, "x", bson.D{}).Err()
	ce := wantCodeName(t, err, 323, "APIStrictError")
	want := "Provided apiStrict:true, but the command distinct is not in API Version 1. Information on supported " +
		"commands and migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api."
	if ce.Message != want {
		t.Errorf("message %q", ce.Message)
	}
	_, err = db.Client().Database("admin").Aggregate(ctx, bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{}}}})
	ce = wantCodeName(t, err, 323, "APIStrictError")
	if ce.Message != "$listLocalSessions is not allowed with 'apiStrict: true' in API Version 1" {
		t.Errorf("message %q", ce.Message)
	}
	plain := srv.client(t).Database(dbName(t))
	err = plain.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}, {Key: "apiVersion", Value: "9"}}).Err()
	_ = wantCodeName(t, err, 322, "APIVersionError")
	err = plain.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}, {Key: "apiStrict", Value: true}}).Err()
	_ = wantCodeName(t, err, 4886600, "Location4886600")
	raw, err := plain.RunCommand(ctx, bson.D{{Key: "listCommands", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]string{"find": `["1"]`, "distinct": `[]`} {
		if got := raw.Lookup("commands", cmd, "apiVersions").String(); got != want {
			t.Errorf("listCommands %s.apiVersions = %s, want %s", cmd, got, want)
		}
	}
}

// TestUpdatePipelineUnknownStage: an update pipeline naming no stage at all fails the whole
// command (MongoDB lite-parses the pipeline for the command), while a real stage an update
// cannot run ($match) fails only its statement.
func TestUpdatePipelineUnknownStage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	bogus := bson.A{bson.D{{Key: "$invalidOperator", Value: true}}}
	ce := wrCmdError(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}}}}},
		bson.D{{Key: "q", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "u", Value: bogus}},
	}}})
	if ce.Code != 40324 || ce.Message != "Unrecognized pipeline stage name: '$invalidOperator'" {
		t.Fatalf("update: %v", ce)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{{Key: "y", Value: 1}}); n != 0 {
		t.Fatal("the statement before the bad one was applied")
	}
	ce = wrCmdError(t, db, bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{}}, {Key: "update", Value: bogus}})
	if ce.Code != 40324 {
		t.Fatalf("findAndModify: %v", ce)
	}
	reply := wrRun(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}}}}}})
	if we := wrFirstWriteError(t, reply); we["code"] != int32(72) {
		t.Fatalf("$match in an update: %v", reply)
	}
}

// TestSortCompatEmptySegment: a sort key with an empty field name, in find or in $sort,
// is refused as a FieldPath (15998), as is a positional projection in $project (31324),
// which only find allows.
func TestSortCompatEmptySegment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedServer(t).client(t).Database(dbName(t)).Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "a..b", Value: 1}}))
	_ = wantCodeName(t, err, 15998, "Location15998")
	_, err = c.Aggregate(ctx, bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "a..b", Value: 1}}}}})
	ce := wantCodeName(t, err, 15998, "Location15998")
	if ce.Message != "FieldPath field names may not be empty strings." {
		t.Errorf("message %q", ce.Message)
	}
	_, err = c.Aggregate(ctx, bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "a.$", Value: 1}}}}})
	_ = wantCodeName(t, err, 31324, "Location31324")
	if cur, err := c.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "$natural", Value: 1}})); err != nil {
		t.Errorf("sort by $natural: %v", err)
	} else {
		_ = cur.Close(ctx)
	}
}

// TestInsertCompatEmptyTimestamp: Timestamp(0, 0) in a top-level field other than _id is
// replaced by the current cluster time on insert and on replacement-style update and
// findAndModify (upserts too), kept by operator and pipeline updates, in nested fields, in
// _id, and everywhere with bypassEmptyTsReplacement (MongoDB's jstests/core/empty_ts).
func TestInsertCompatEmptyTimestamp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	empty := bson.Timestamp{}
	ts := bson.D{{Key: "a", Value: empty}}
	run := func(cmd bson.D) { wrRun(t, db, cmd) }
	run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 101}, {Key: "a", Value: empty}, {Key: "n", Value: ts}},
		bson.D{{Key: "_id", Value: 106}, {Key: "a", Value: 3}},
		bson.D{{Key: "_id", Value: 107}, {Key: "a", Value: 4}},
		bson.D{{Key: "_id", Value: 102}, {Key: "a", Value: 1}},
		bson.D{{Key: "_id", Value: 103}, {Key: "a", Value: 2}},
		bson.D{{Key: "_id", Value: empty}, {Key: "a", Value: 9}},
	}}})
	run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 120}, {Key: "a", Value: empty}}}},
		{Key: "bypassEmptyTsReplacement", Value: true}})
	upd := func(id any, u any, upsert bool) bson.D {
		return bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
			{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "u", Value: u}, {Key: "upsert", Value: upsert}}}}}
	}
	fam := func(id any, u any, upsert bool) bson.D {
		return bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: id}}},
			{Key: "update", Value: u}, {Key: "upsert", Value: upsert}}
	}
	run(upd(102, ts, false))
	run(fam(103, ts, false))
	run(upd(104, ts, true))
	run(fam(105, ts, true))
	run(upd(106, bson.D{{Key: "$set", Value: ts}}, false))
	run(fam(107, bson.A{bson.D{{Key: "$addFields", Value: ts}}}, false))
	run(append(upd(121, ts, true), bson.E{Key: "bypassEmptyTsReplacement", Value: true}))
	cur, err := c.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	replaced := map[any]bool{int32(101): true, int32(102): true, int32(103): true, int32(104): true, int32(105): true}
	for _, d := range docs {
		a, isTs := d["a"].(bson.Timestamp)
		switch id := d["_id"]; {
		case id == empty:
			if d["a"] != int32(9) {
				t.Errorf("_id Timestamp(0, 0): %v", d)
			}
		case replaced[id]:
			if !isTs || a.T == 0 {
				t.Errorf("_id %v: a = %v, want the current time", id, d["a"])
			}
		case !isTs || a != empty:
			t.Errorf("_id %v: a = %v, want Timestamp(0, 0)", id, d["a"])
		}
		if id := d["_id"]; id == int32(101) {
			if n, _ := d["n"].(bson.D); len(n) != 1 || n[0].Value != empty {
				t.Errorf("nested timestamp replaced: %v", d)
			}
		}
	}
	if len(docs) != 10 {
		t.Errorf("%d documents: %v", len(docs), docs)
	}
}

// TestAggregateCompatBypassDocumentValidation: $out and $merge into a collection with a
// validator fail on an invalid document (121) unless the aggregate says
// bypassDocumentValidation: true.
func TestAggregateCompatBypassDocumentValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if _, err := db.Collection("src").InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: "s"}}}); err != nil {
		t.Fatal(err)
	}
	validator := bson.D{{Key: "x", Value: bson.D{{Key: "$type", Value: "int"}}}}
	for _, name := range []string{"out", "merged"} {
		if err := db.CreateCollection(ctx, name, options.CreateCollection().SetValidator(validator)); err != nil {
			t.Fatal(err)
		}
	}
	stages := map[string]bson.D{
		"out":    {{Key: "$out", Value: "out"}},
		"merged": {{Key: "$merge", Value: bson.D{{Key: "into", Value: "merged"}}}},
	}
	for target, stage := range stages {
		cmd := bson.D{{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: bson.A{stage}}, {Key: "cursor", Value: bson.D{}}}
		_ = wantCodeName(t, db.RunCommand(ctx, cmd).Err(), 121, "DocumentValidationFailure")
		if err := db.RunCommand(ctx, append(cmd, bson.E{Key: "bypassDocumentValidation", Value: true})).Err(); err != nil {
			t.Fatalf("%s with bypassDocumentValidation: %v", target, err)
		}
		if n, err := db.Collection(target).CountDocuments(ctx, bson.D{{Key: "x", Value: "s"}}); err != nil || n != 1 {
			t.Errorf("%s: %d documents, %v", target, n, err)
		}
	}
}

// TestAggregateCompatLookupFromView: $lookup and $unionWith may name a view: its pipeline
// (through a chain of views) runs over the backing collection first, then the join's.
func TestAggregateCompatLookupFromView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if _, err := db.Collection("items").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "a"}, {Key: "n", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "a"}, {Key: "n", Value: 20}},
		bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: "b"}, {Key: "n", Value: 30}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("keys").InsertMany(ctx, []any{bson.D{{Key: "_id", Value: "a"}}, bson.D{{Key: "_id", Value: "b"}}}); err != nil {
		t.Fatal(err)
	}
	big := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 10}}}}}}}
	if err := db.CreateView(ctx, "big", "items", big); err != nil {
		t.Fatal(err)
	}
	tagged := bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "tag", Value: "big"}}}}}
	if err := db.CreateView(ctx, "tagged", "big", tagged); err != nil {
		t.Fatal(err)
	}
	agg := func(pipeline bson.A) string {
		t.Helper()
		cur, err := db.Collection("keys").Aggregate(ctx, pipeline)
		if err != nil {
			t.Fatal(err)
		}
		var out []bson.Raw
		if err := cur.All(ctx, &out); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(out)
	}
	got := agg(bson.A{
		bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "tagged"}, {Key: "localField", Value: "_id"},
			{Key: "foreignField", Value: "k"}, {Key: "as", Value: "m"}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	want := `[{"_id": "a","m": [{"_id": {"$numberInt":"2"},"k": "a","n": {"$numberInt":"20"},"tag": "big"}]} ` +
		`{"_id": "b","m": [{"_id": {"$numberInt":"3"},"k": "b","n": {"$numberInt":"30"},"tag": "big"}]}]`
	if got != want {
		t.Errorf("$lookup from a view:\n got %s\nwant %s", got, want)
	}
	got = agg(bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: "a"}}}},
		bson.D{{Key: "$unionWith", Value: bson.D{{Key: "coll", Value: "tagged"},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "n", Value: 1}}}}}}}}},
	})
	want = `[{"_id": "a"} {"_id": {"$numberInt":"2"},"n": {"$numberInt":"20"}} {"_id": {"$numberInt":"3"},"n": {"$numberInt":"30"}}]`
	if got != want {
		t.Errorf("$unionWith a view:\n got %s\nwant %s", got, want)
	}
}
