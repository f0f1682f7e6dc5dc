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

// collMod runs {collMod: coll, ...args} on db.
func collMod(t *testing.T, db *mongo.Database, coll string, args ...bson.E) (bson.M, error) {
	t.Helper()
	return runCmd(t, db, append(bson.D{{Key: "collMod", Value: coll}}, args...))
}

// wantCodeName fails unless err is a command error with code and codeName.
func wantCodeName(t *testing.T, err error, code int32, name string) mongo.CommandError {
	t.Helper()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != code || ce.Name != name {
		t.Fatalf("got %v, want %s (%d)", err, name, code)
	}
	return ce
}

// indexSpecs lists the indexes of c by name.
func indexSpecs(t *testing.T, c *mongo.Collection) map[string]bson.M {
	t.Helper()
	cur, err := c.Indexes().List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.M
	if err := cur.All(context.Background(), &specs); err != nil {
		t.Fatal(err)
	}
	out := map[string]bson.M{}
	for _, s := range specs {
		out[s["name"].(string)] = s
	}
	return out
}

// explainFind returns the explain output of find(filter) on c as text.
func explainFind(t *testing.T, c *mongo.Collection, filter bson.D) string {
	t.Helper()
	var res bson.M
	err := c.Database().RunCommand(context.Background(), bson.D{{Key: "explain", Value: bson.D{
		{Key: "find", Value: c.Name()}, {Key: "filter", Value: filter}}}}).Decode(&res)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(res["queryPlanner"])
}

func TestCollModIndexHidden(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "a", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if plan := explainFind(t, c, bson.D{{Key: "a", Value: 1}}); !strings.Contains(plan, "IXSCAN") {
		t.Fatalf("visible index not used: %s", plan)
	}
	res, err := collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "hidden", Value: true}}})
	if err != nil || res["hidden_old"] != false || res["hidden_new"] != true {
		t.Fatalf("hide: %v %v", res, err)
	}
	if s := indexSpecs(t, c)["a_1"]; s["hidden"] != true {
		t.Fatalf("listIndexes: %v", s)
	}
	if plan := explainFind(t, c, bson.D{{Key: "a", Value: 1}}); strings.Contains(plan, "IXSCAN") {
		t.Fatalf("hidden index used: %s", plan)
	}
	err = c.FindOne(ctx, bson.D{{Key: "a", Value: 1}}, options.FindOne().SetHint("a_1")).Err()
	_ = wantCodeName(t, err, 2, "BadValue")
	// A hidden index is still maintained: unhidden, it finds a document inserted meanwhile.
	if _, err := c.InsertOne(ctx, bson.D{{Key: "a", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	res, err = collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "hidden", Value: true}}})
	if _, ok := res["hidden_new"]; err != nil || ok {
		t.Fatalf("hiding again is a no-op: %v %v", res, err)
	}
	res, err = collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "hidden", Value: false}}})
	if err != nil || res["hidden_old"] != true || res["hidden_new"] != false {
		t.Fatalf("unhide: %v %v", res, err)
	}
	if _, ok := indexSpecs(t, c)["a_1"]["hidden"]; ok {
		t.Fatal("hidden: false is kept in the spec")
	}
	if n, err := c.CountDocuments(ctx, bson.D{{Key: "a", Value: 3}}, options.Count().SetHint("a_1")); err != nil || n != 1 {
		t.Fatalf("count through the unhidden index = %d, %v", n, err)
	}
	_, err = collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "_id_"}, {Key: "hidden", Value: true}}})
	_ = wantCodeName(t, err, 2, "BadValue")
}

func TestCollModIndexTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	models := []mongo.IndexModel{
		{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(3600)},
		{Keys: bson.D{{Key: "b", Value: 1}}},
		{Keys: bson.D{{Key: "x", Value: 1}, {Key: "y", Value: 1}}},
	}
	if _, err := c.Indexes().CreateMany(ctx, models); err != nil {
		t.Fatal(err)
	}
	res, err := collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "expireAfterSeconds", Value: 10}}})
	if err != nil || res["expireAfterSeconds_old"] != int64(3600) || res["expireAfterSeconds_new"] != int64(10) {
		t.Fatalf("change TTL: %v %v", res, err)
	}
	res, err = collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "b_1"}, {Key: "expireAfterSeconds", Value: 60}}})
	if _, had := res["expireAfterSeconds_old"]; err != nil || had || res["expireAfterSeconds_new"] != int64(60) {
		t.Fatalf("make TTL: %v %v", res, err)
	}
	specs := indexSpecs(t, c)
	if fmt.Sprint(specs["at_1"]["expireAfterSeconds"]) != "10" || fmt.Sprint(specs["b_1"]["expireAfterSeconds"]) != "60" {
		t.Fatalf("listIndexes: %v", specs)
	}
	_, err = collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "x_1_y_1"}, {Key: "expireAfterSeconds", Value: 60}}})
	_ = wantCodeName(t, err, 72, "InvalidOptions")
	_, err = collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "_id_"}, {Key: "expireAfterSeconds", Value: 60}}})
	_ = wantCodeName(t, err, 72, "InvalidOptions")
	_, err = collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "b_1"}, {Key: "expireAfterSeconds", Value: -1}}})
	_ = wantCodeName(t, err, 72, "InvalidOptions")
}

func TestCollModUniqueConversion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t)
	db := srv.client(t).Database("conv")
	c := db.Collection("c")
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 1}},
		bson.D{{Key: "_id", Value: 3}, {Key: "x", Value: 2}},
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	byKey := bson.E{Key: "keyPattern", Value: bson.D{{Key: "x", Value: 1}}}
	_, err := collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{byKey, {Key: "unique", Value: true}}})
	_ = wantCodeName(t, err, 72, "InvalidOptions")
	res, err := collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{byKey, {Key: "prepareUnique", Value: true}}})
	if err != nil || res["prepareUnique_old"] != false || res["prepareUnique_new"] != true {
		t.Fatalf("prepareUnique: %v %v", res, err)
	}
	// New duplicates are refused; the existing ones stay and their documents can change.
	_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}, {Key: "x", Value: 1}})
	wantCode(t, err, 11000, "index: x_1 dup key: { x: 1 }")
	_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "x", Value: 2}})
	wantCode(t, err, 11000, "dup key: { x: 2 }")
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}}); err != nil {
		t.Fatalf("update keeping a duplicated key: %v", err)
	}
	_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
	wantCode(t, err, 11000, "dup key: { x: 1 }")
	if _, err = c.InsertMany(ctx, []any{bson.D{{Key: "x", Value: 9}}, bson.D{{Key: "x", Value: 9}}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("two new duplicates in one batch: %v", err)
	}

	unique := bson.E{Key: "index", Value: bson.D{byKey, {Key: "unique", Value: true}}}
	_, err = collMod(t, db, "c", unique, bson.E{Key: "dryRun", Value: true})
	ce := wantCodeName(t, err, 359, "CannotConvertIndexToUnique")
	var reply struct {
		Violations []struct {
			IDs []int32 `bson:"ids"`
		} `bson:"violations"`
	}
	if err := bson.Unmarshal(ce.Raw, &reply); err != nil || fmt.Sprint(reply.Violations) != "[{[1 2]}]" {
		t.Fatalf("violations = %+v, %v (%s)", reply.Violations, err, ce.Raw)
	}
	_, err = collMod(t, db, "c", unique)
	ce = wantCodeName(t, err, 359, "CannotConvertIndexToUnique")
	if !strings.Contains(ce.Message, "Please resolve conflicting documents") {
		t.Fatalf("message = %q", ce.Message)
	}
	if _, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := collMod(t, db, "c", unique, bson.E{Key: "dryRun", Value: true}); err != nil {
		t.Fatalf("dry run without duplicates: %v", err)
	}
	res, err = collMod(t, db, "c", unique)
	if err != nil || res["unique_new"] != true {
		t.Fatalf("unique: %v %v", res, err)
	}
	srv.stop()
	srv.restart()
	c = srv.client(t).Database("conv").Collection("c")
	s := indexSpecs(t, c)["x_1"]
	if _, prep := s["prepareUnique"]; s["unique"] != true || prep {
		t.Fatalf("listIndexes after restart: %v", s)
	}
	_, err = c.InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	wantCode(t, err, 11000, "dup key: { x: 1 }")
}

func TestCollModOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t)
	db := srv.client(t).Database("opts")
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetChangeStreamPreAndPostImages(bson.D{{Key: "enabled", Value: false}})); err != nil {
		t.Fatal(err)
	}
	if o := collOptions(t, db, "c"); len(o) != 0 {
		t.Fatalf("disabled pre- and post-images are not stored: %v", o)
	}
	if _, err := collMod(t, db, "c", bson.E{Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: true}}}); err != nil {
		t.Fatal(err)
	}
	validator := bson.D{{Key: "a", Value: bson.D{{Key: "$type", Value: "int"}}}}
	if _, err := collMod(t, db, "c", bson.E{Key: "validator", Value: validator}, bson.E{Key: "validationAction", Value: "warn"}); err != nil {
		t.Fatal(err)
	}
	const want = `{"changeStreamPreAndPostImages": {"enabled": true},"validator": {"a": {"$type": "int"}},"validationLevel": "strict","validationAction": "warn"}`
	if o := collOptionsRaw(t, db, "c"); o.String() != want {
		t.Fatalf("options = %s", o)
	}
	srv.stop()
	srv.restart()
	db = srv.client(t).Database("opts")
	if o := collOptionsRaw(t, db, "c"); o.String() != want {
		t.Fatalf("options after restart = %s", o)
	}
	if _, err := collMod(t, db, "c", bson.E{Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: false}}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := collOptions(t, db, "c")["changeStreamPreAndPostImages"]; ok {
		t.Fatal("disabled pre- and post-images still listed")
	}
}

// collOptions returns listCollections' options of collection name.
func collOptions(t *testing.T, db *mongo.Database, name string) bson.M {
	t.Helper()
	cur, err := db.ListCollections(context.Background(), bson.D{{Key: "name", Value: name}})
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.M
	if err := cur.All(context.Background(), &specs); err != nil || len(specs) != 1 {
		t.Fatalf("listCollections: %v %v", specs, err)
	}
	return asM(specs[0]["options"])
}

// collOptionsRaw returns listCollections' options of collection name, in the server's order.
func collOptionsRaw(t *testing.T, db *mongo.Database, name string) bson.Raw {
	t.Helper()
	cur, err := db.ListCollections(context.Background(), bson.D{{Key: "name", Value: name}})
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.Raw
	if err := cur.All(context.Background(), &specs); err != nil || len(specs) != 1 {
		t.Fatalf("listCollections: %v %v", specs, err)
	}
	return specs[0].Lookup("options").Document()
}

func TestCollModErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	partial := options.Index().SetName("a_partial").SetPartialFilterExpression(bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 0}}}})
	models := []mongo.IndexModel{{Keys: bson.D{{Key: "a", Value: 1}}}, {Keys: bson.D{{Key: "a", Value: 1}}, Options: partial}}
	if _, err := c.Indexes().CreateMany(ctx, models); err != nil {
		t.Fatal(err)
	}
	idx := func(fields ...bson.E) bson.E { return bson.E{Key: "index", Value: bson.D(fields)} }
	hide := bson.E{Key: "hidden", Value: true}
	cases := []struct {
		name string
		coll string
		args []bson.E
		code int32
	}{
		{"NoCollection", "none", []bson.E{idx(bson.E{Key: "name", Value: "a_1"}, hide)}, 26},
		{"UnknownField", "c", []bson.E{{Key: "foo", Value: 1}}, 40415},
		{"UnknownIndexField", "c", []bson.E{idx(bson.E{Key: "name", Value: "a_1"}, bson.E{Key: "sparse", Value: true})}, 40415},
		{"NameAndKeyPattern", "c", []bson.E{idx(bson.E{Key: "name", Value: "a_1"}, bson.E{Key: "keyPattern", Value: bson.D{{Key: "a", Value: 1}}}, hide)}, 72},
		{"NoIndexTarget", "c", []bson.E{idx(hide)}, 72},
		{"NoIndexChange", "c", []bson.E{idx(bson.E{Key: "name", Value: "a_1"})}, 72},
		{"IndexNotFound", "c", []bson.E{idx(bson.E{Key: "name", Value: "zz"}, hide)}, 27},
		{"KeyPatternNotFound", "c", []bson.E{idx(bson.E{Key: "keyPattern", Value: bson.D{{Key: "zz", Value: 1}}}, hide)}, 27},
		{"AmbiguousKeyPattern", "c", []bson.E{idx(bson.E{Key: "keyPattern", Value: bson.D{{Key: "a", Value: 1}}}, hide)}, 181},
		{"MakeNonUnique", "c", []bson.E{idx(bson.E{Key: "name", Value: "a_1"}, bson.E{Key: "unique", Value: false})}, 2},
		{"PrepareUniqueWithOther", "c", []bson.E{idx(bson.E{Key: "name", Value: "a_1"}, bson.E{Key: "prepareUnique", Value: true}, hide)}, 72},
		{"ViewOn", "c", []bson.E{{Key: "viewOn", Value: "x"}}, 72},
		{"Pipeline", "c", []bson.E{{Key: "pipeline", Value: bson.A{}}}, 72},
		{"ExpireNotClustered", "c", []bson.E{{Key: "expireAfterSeconds", Value: 10}}, 72},
		{"CappedSize", "c", []bson.E{{Key: "cappedSize", Value: 4096}}, 72},
		{"TimeseriesNotTimeseries", "c", []bson.E{{Key: "timeseries", Value: bson.D{{Key: "granularity", Value: "hours"}}}}, 72},
		{"BadValidationLevel", "c", []bson.E{{Key: "validationLevel", Value: "x"}}, 2},
		{"BadPrePostImages", "c", []bson.E{{Key: "changeStreamPreAndPostImages", Value: bson.D{}}}, 40414},
		{"DryRunNoIndex", "c", []bson.E{{Key: "dryRun", Value: true}}, 72},
	}
	for _, tc := range cases {
		_, err := collMod(t, db, tc.coll, tc.args...)
		t.Run(tc.name, func(t *testing.T) { wantCode(t, err, tc.code, "") })
	}
}
