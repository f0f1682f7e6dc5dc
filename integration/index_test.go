package integration

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// createIndexesCmd runs createIndexes with raw specs.
func createIndexesCmd(t *testing.T, db *mongo.Database, coll string, specs ...bson.D) (bson.M, error) {
	t.Helper()
	arr := bson.A{}
	for _, s := range specs {
		arr = append(arr, s)
	}
	return runCmd(t, db, bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: arr}})
}

// spec builds an index spec {key, name, ...opts}.
func spec(key bson.D, name string, opts ...bson.E) bson.D {
	return append(bson.D{{Key: "key", Value: key}, {Key: "name", Value: name}}, opts...)
}

func TestIndexCreateAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	res, err := createIndexesCmd(t, db, "c", spec(bson.D{{Key: "a", Value: 1}}, "a_1"))
	if err != nil {
		t.Fatal(err)
	}
	if res["numIndexesBefore"] != int32(1) || res["numIndexesAfter"] != int32(2) || res["createdCollectionAutomatically"] != true {
		t.Errorf("createIndexes = %v", res)
	}
	names, err := c.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}},
		{Keys: bson.D{{Key: "h", Value: "hashed"}}},
		{Keys: bson.D{{Key: "s", Value: 1}}, Options: options.Index().SetSparse(true)},
		{Keys: bson.D{{Key: "p", Value: 1}}, Options: options.Index().SetPartialFilterExpression(bson.D{{Key: "p", Value: bson.D{{Key: "$gt", Value: 5}}}})},
		{Keys: bson.D{{Key: "t", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(3600)},
	})
	if err != nil || len(names) != 5 || names[0] != "a_1_b_-1" {
		t.Fatalf("CreateMany = %v, %v", names, err)
	}
	res, err = createIndexesCmd(t, db, "c", spec(bson.D{{Key: "a", Value: 1}}, "a_1"))
	if err != nil || res["note"] != "all indexes already exist" || res["numIndexesAfter"] != int32(7) {
		t.Errorf("identical index = %v, %v", res, err)
	}
	cur, err := c.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.M
	if err := cur.All(ctx, &specs); err != nil || len(specs) != 7 {
		t.Fatalf("listIndexes = %v, %v", specs, err)
	}
	if specs[0]["name"] != "_id_" || specs[0]["v"] != int32(2) {
		t.Errorf("first index = %v", specs[0])
	}
	if specs[4]["sparse"] != true || specs[6]["expireAfterSeconds"] != int32(3600) || specs[5]["partialFilterExpression"] == nil {
		t.Errorf("index options = %v", specs)
	}
	_, err = runCmd(t, db, bson.D{{Key: "listIndexes", Value: "missing"}})
	wantCode(t, err, 26, "ns does not exist: "+dbName(t)+".missing")
}

func TestIndexCreateErrors(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	if _, err := createIndexesCmd(t, db, "c", spec(bson.D{{Key: "a", Value: 1}}, "a_1")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		spec bson.D
		code int32
		msg  string
	}{
		{"UnknownOption", spec(bson.D{{Key: "b", Value: 1}}, "b_1", bson.E{Key: "foo", Value: 1}), 197,
			`The field 'foo' is not valid for an index specification. Specification: { key: { b: 1 }, name: "b_1", foo: 1 }`},
		{"SameNameOtherKey", spec(bson.D{{Key: "b", Value: 1}}, "a_1"), 86, "An existing index has the same name as the requested index."},
		{"SameKeyOtherName", spec(bson.D{{Key: "a", Value: 1}}, "other"), 85, "Index already exists with a different name: a_1"},
		{"SameNameOtherTTL", spec(bson.D{{Key: "a", Value: 1}}, "a_1", bson.E{Key: "expireAfterSeconds", Value: 10}), 85, "An equivalent index already exists with the same name but different options."},
		{"EmptyKey", spec(bson.D{}, "e"), 67, "Index keys cannot be empty."},
		{"HashedUnique", spec(bson.D{{Key: "h", Value: "hashed"}}, "h", bson.E{Key: "unique", Value: true}), 67, ""},
		{"TextNotAdjacent", spec(bson.D{{Key: "t", Value: "text"}, {Key: "a", Value: 1}, {Key: "u", Value: "text"}}, "t"), 17389, "'text' fields in index must all be adjacent"},
		{"BadTTL", spec(bson.D{{Key: "d", Value: 1}}, "d", bson.E{Key: "expireAfterSeconds", Value: -1}), 67, ""},
	}
	for _, tc := range cases {
		_, err := createIndexesCmd(t, db, "c", tc.spec)
		t.Run(tc.name, func(t *testing.T) { wantCode(t, err, tc.code, tc.msg) })
	}
	// A unique index on the same key is a different index in MongoDB 7.0.
	if _, err := createIndexesCmd(t, db, "c", spec(bson.D{{Key: "a", Value: 1}}, "a_unique", bson.E{Key: "unique", Value: true})); err != nil {
		t.Errorf("unique variant: %v", err)
	}
}

func TestIndexUniqueViolations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "u", Value: "x"}}, bson.D{{Key: "_id", Value: 2}, {Key: "u", Value: "x"}}}); err != nil {
		t.Fatal(err)
	}
	unique := mongo.IndexModel{Keys: bson.D{{Key: "u", Value: 1}}, Options: options.Index().SetUnique(true)}
	_, err := c.Indexes().CreateOne(ctx, unique)
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 11000 {
		t.Fatalf("build over duplicates: %v", err)
	}
	// MongoDB's context: the build's uuid, then the collection's (listCollections' info.uuid).
	specs, lerr := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "c"}})
	if lerr != nil || len(specs) != 1 {
		t.Fatal(specs, lerr)
	}
	uuidRE := `[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`
	want := `^Index build failed: ` + uuidRE + `: Collection ` + regexp.QuoteMeta(dbName(t)+`.c ( `+uuidText(specs[0].UUID.Data)+` ) :: caused by :: `+
		`E11000 duplicate key error collection: `+dbName(t)+`.c index: u_1 dup key: { u: "x" }`) + `$`
	if !regexp.MustCompile(want).MatchString(ce.Message) {
		t.Errorf("build over duplicates: %q, want %s", ce.Message, want)
	}
	var raw bson.M
	if err := bson.Unmarshal(ce.Raw, &raw); err != nil || raw["keyPattern"] == nil || raw["keyValue"] == nil {
		t.Errorf("error reply lacks keyPattern/keyValue: %v", raw)
	}
	// No trace: the index is not listed and duplicates still insert.
	if specs, _ := c.Indexes().ListSpecifications(ctx); len(specs) != 1 {
		t.Fatalf("failed build left %v", specs)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "u", Value: "x"}}); err != nil {
		t.Fatalf("insert after failed build: %v", err)
	}
	if _, err := c.DeleteMany(ctx, bson.D{{Key: "u", Value: "x"}, {Key: "_id", Value: bson.D{{Key: "$ne", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Indexes().CreateOne(ctx, unique); err != nil {
		t.Fatalf("build without duplicates: %v", err)
	}
	_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 9}, {Key: "u", Value: "x"}})
	wantCode(t, err, 11000, `index: u_1 dup key: { u: "x" }`)
	var we mongo.WriteException
	if errors.As(err, &we) {
		var details bson.M
		_ = bson.Unmarshal(we.WriteErrors[0].Raw, &details)
		if kp, ok := asM(details["keyPattern"]), details["keyPattern"] != nil; !ok || kp["u"] != int32(1) {
			t.Errorf("write error = %v", details)
		}
	}
}

func TestIndexUsedByFind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	docs := make([]any, 0, 300)
	for i := 0; i < 300; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i % 10}, {Key: "tags", Value: bson.A{fmt.Sprint("t", i%3), "all"}}})
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Indexes().CreateMany(ctx, []mongo.IndexModel{{Keys: bson.D{{Key: "n", Value: 1}}}, {Keys: bson.D{{Key: "tags", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	count := func(filter bson.D, hint any) int {
		t.Helper()
		cur, err := c.Find(ctx, filter, options.Find().SetHint(hint))
		if err != nil {
			t.Fatalf("find %v: %v", filter, err)
		}
		var out []bson.M
		if err := cur.All(ctx, &out); err != nil {
			t.Fatal(err)
		}
		return len(out)
	}
	if n := count(bson.D{{Key: "n", Value: 3}}, "n_1"); n != 30 {
		t.Errorf("n = 3 through index: %d", n)
	}
	if n := count(bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 8}}}}, bson.D{{Key: "n", Value: 1}}); n != 60 {
		t.Errorf("n >= 8 through index: %d", n)
	}
	if n := count(bson.D{{Key: "tags", Value: "t1"}}, "tags_1"); n != 100 {
		t.Errorf("multikey tags = t1: %d", n)
	}
	if n := count(bson.D{{Key: "tags", Value: "all"}}, "tags_1"); n != 300 {
		t.Errorf("multikey tags = all: %d", n)
	}
	// Updates and deletes keep the index in step.
	if _, err := c.DeleteMany(ctx, bson.D{{Key: "n", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	if n := count(bson.D{{Key: "n", Value: 3}}, "n_1"); n != 0 {
		t.Errorf("after delete: %d", n)
	}
}

func TestIndexDrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	models := []mongo.IndexModel{{Keys: bson.D{{Key: "a", Value: 1}}}, {Keys: bson.D{{Key: "b", Value: 1}}}, {Keys: bson.D{{Key: "c", Value: 1}}}, {Keys: bson.D{{Key: "d", Value: 1}}}}
	if _, err := c.Indexes().CreateMany(ctx, models); err != nil {
		t.Fatal(err)
	}
	drop := func(index any) (bson.M, error) {
		return runCmd(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: index}})
	}
	if res, err := drop("a_1"); err != nil || res["nIndexesWas"] != int32(5) {
		t.Fatalf("drop by name = %v, %v", res, err)
	}
	if _, err := drop(bson.D{{Key: "b", Value: 1}}); err != nil {
		t.Fatalf("drop by key: %v", err)
	}
	_, err := drop("_id_")
	wantCode(t, err, 72, "cannot drop _id index")
	_, err = drop("nope")
	wantCode(t, err, 27, "index not found with name [nope]")
	_, err = runCmd(t, db, bson.D{{Key: "dropIndexes", Value: "missing"}, {Key: "index", Value: "*"}})
	wantCode(t, err, 26, "")
	if _, err := drop(bson.A{"c_1"}); err != nil {
		t.Fatalf("drop by array: %v", err)
	}
	if err := c.Indexes().DropAll(ctx); err != nil {
		t.Fatalf("drop *: %v", err)
	}
	specs, _ := c.Indexes().ListSpecifications(ctx)
	if len(specs) != 1 {
		t.Fatalf("after drops: %v", specs)
	}
	// Re-creating a dropped index rebuilds it from the data.
	if _, err := c.Indexes().CreateOne(ctx, models[0]); err != nil {
		t.Fatal(err)
	}
	cur, err := c.Find(ctx, bson.D{{Key: "a", Value: 1}}, options.Find().SetHint("a_1"))
	var out []bson.M
	if err != nil || cur.All(ctx, &out) != nil || len(out) != 1 {
		t.Fatalf("find through rebuilt index = %v, %v", out, err)
	}
}

func TestIndexTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--test-commands")
	cl := srv.client(t)
	db := cl.Database("ttl")
	c := db.Collection("c")
	old := time.Now().Add(-time.Hour)
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: old}, {Key: "k", Value: "a"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "at", Value: time.Now().Add(time.Hour)}, {Key: "k", Value: "a"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "at", Value: "not a date"}, {Key: "k", Value: "a"}},
		bson.D{{Key: "_id", Value: 4}, {Key: "at", Value: bson.A{time.Now(), old}}, {Key: "k", Value: "a"}},
		bson.D{{Key: "_id", Value: 5}, {Key: "k", Value: "a"}},
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	models := []mongo.IndexModel{
		{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(60)},
		{Keys: bson.D{{Key: "k", Value: 1}}},
	}
	if _, err := c.Indexes().CreateMany(ctx, models); err != nil {
		t.Fatal(err)
	}
	res, err := runCmd(t, cl.Database("admin"), bson.D{{Key: "cleaveTTLMonitor", Value: 1}, {Key: "intervalMS", Value: 100}})
	if err != nil {
		t.Fatalf("cleaveTTLMonitor: %v", err)
	}
	if res["passes"].(int64) < 1 {
		t.Errorf("passes = %v", res)
	}
	cur, err := c.Find(ctx, bson.D{{Key: "k", Value: "a"}}, options.Find().SetHint("k_1").SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var left []struct {
		ID int `bson:"_id"`
	}
	if err := cur.All(ctx, &left); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(left) != "[{2} {3} {5}]" {
		t.Fatalf("documents left through the other index = %v", left)
	}
	// A new expired document goes within a few intervals, without the command.
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 6}, {Key: "at", Value: old}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for countFind(t, c, bson.D{{Key: "_id", Value: 6}}, nil) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the TTL monitor did not delete a new expired document")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestIndexBuildWithConcurrentWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t).Database("build").Collection("c")
	const n = 5000
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i % 100}}
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := n; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i % 100}}); err != nil {
				t.Errorf("insert during build: %v", err)
				return
			}
			if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: i - n}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 1000}}}}); err != nil {
				t.Errorf("update during build: %v", err)
				return
			}
		}
	}()
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "v", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	for _, filter := range []bson.D{{}, {{Key: "v", Value: 1000}}, {{Key: "v", Value: 7}}} {
		scan := countFind(t, c, filter, bson.D{{Key: "$natural", Value: 1}})
		if len(filter) == 0 {
			filter = bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: bson.MinKey{}}}}}
		}
		if idx := countFind(t, c, filter, "v_1"); scan != idx {
			t.Errorf("filter %v: %d documents, %d through the index", filter, scan, idx)
		}
	}
}

// countFind counts the documents find returns for filter, with a hint unless it is nil.
func countFind(t *testing.T, c *mongo.Collection, filter bson.D, hint any) int {
	t.Helper()
	opts := options.Find()
	if hint != nil {
		opts.SetHint(hint)
	}
	cur, err := c.Find(context.Background(), filter, opts)
	if err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	var out []bson.Raw
	if err := cur.All(context.Background(), &out); err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	return len(out)
}

// uuidText formats a UUID as MongoDB prints one in messages (8-4-4-4-12 hex digits).
func uuidText(b []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// TestTTLMonitorSleepSecs: setParameter ttlMonitorSleepSecs (as Mongoose's and many apps'
// tests set it) changes the TTL monitor's sleep at runtime: with 1 s an expired document goes
// within seconds, where the default (60 s) would keep it; getParameter reports it, and a
// value below 1 is refused.
func TestTTLMonitorSleepSecs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t)
	cl := srv.client(t)
	admin := cl.Database("admin")
	res, err := runCmd(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "ttlMonitorSleepSecs", Value: 1}})
	if err != nil || res["ttlMonitorSleepSecs"] != int32(60) {
		t.Fatalf("getParameter before: %v, %v", res, err)
	}
	c := cl.Database("ttlsleep").Collection("c")
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "ttlMonitorSleepSecs", Value: 1}}); err != nil {
		t.Fatalf("setParameter: %v", err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: time.Now().Add(-time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the TTL monitor to delete the expired document", func() bool {
		n, err := c.CountDocuments(ctx, bson.D{})
		return err == nil && n == 0
	})
	res, err = runCmd(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "ttlMonitorSleepSecs", Value: 1}})
	if err != nil || res["ttlMonitorSleepSecs"] != int32(1) {
		t.Fatalf("getParameter after: %v, %v", res, err)
	}
	_, err = runCmd(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "ttlMonitorSleepSecs", Value: 0}})
	_ = wantCodeName(t, err, 2, "BadValue")
}
