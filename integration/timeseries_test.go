package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// tsOpts are time-series create options {timeField: "t", metaField: "m"} plus extra fields.
func tsOpts(extra ...bson.E) bson.D {
	return append(bson.D{{Key: "timeField", Value: "t"}, {Key: "metaField", Value: "m"}}, extra...)
}

// createTS runs {create: name, timeseries: ts, ...extra}.
func createTS(t *testing.T, db *mongo.Database, name string, ts bson.D, extra ...bson.E) error {
	t.Helper()
	_, err := runCmd(t, db, append(bson.D{{Key: "create", Value: name}, {Key: "timeseries", Value: ts}}, extra...))
	return err
}

// listSpec returns listCollections' entry of collection name, in the server's order.
func listSpec(t *testing.T, db *mongo.Database, name string) bson.Raw {
	t.Helper()
	cur, err := db.ListCollections(context.Background(), bson.D{{Key: "name", Value: name}})
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.Raw
	if err := cur.All(context.Background(), &specs); err != nil || len(specs) != 1 {
		t.Fatalf("listCollections %s: %v %v", name, specs, err)
	}
	return specs[0]
}

func TestTimeseriesCreate(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	if err := createTS(t, db, "all", tsOpts(bson.E{Key: "granularity", Value: "minutes"}), bson.E{Key: "expireAfterSeconds", Value: 604800}); err != nil {
		t.Fatal(err)
	}
	spec := listSpec(t, db, "all")
	if spec.Lookup("type").StringValue() != "timeseries" {
		t.Fatalf("spec = %s", spec)
	}
	const wantAll = `{"expireAfterSeconds": {"$numberLong":"604800"},"timeseries": {"timeField": "t","metaField": "m","granularity": "minutes","bucketRoundingSeconds": {"$numberInt":"3600"},"bucketMaxSpanSeconds": {"$numberInt":"86400"}}}`
	if o := spec.Lookup("options").Document().String(); o != wantAll {
		t.Fatalf("options = %s", o)
	}
	if info := spec.Lookup("info").Document(); info.String() != `{"readOnly": false}` {
		t.Fatalf("info = %s", info)
	}
	if _, err := spec.LookupErr("idIndex"); err == nil {
		t.Fatalf("idIndex listed: %s", spec)
	}
	// Creating it again with the same options succeeds; with others it fails.
	if err := createTS(t, db, "all", tsOpts(bson.E{Key: "granularity", Value: "minutes"}), bson.E{Key: "expireAfterSeconds", Value: 604800}); err != nil {
		t.Fatalf("same create again: %v", err)
	}
	_ = wantCodeName(t, createTS(t, db, "all", tsOpts()), 48, "NamespaceExists")

	specs := indexSpecs(t, db.Collection("all"))
	if len(specs) != 1 || specs["m_1_t_1"] == nil {
		t.Fatalf("listIndexes = %v", specs)
	}
	if err := createTS(t, db, "bare", bson.D{{Key: "timeField", Value: "t"}}); err != nil {
		t.Fatal(err)
	}
	const wantBare = `{"timeseries": {"timeField": "t","granularity": "seconds","bucketRoundingSeconds": {"$numberInt":"60"},"bucketMaxSpanSeconds": {"$numberInt":"3600"}}}`
	if o := listSpec(t, db, "bare").Lookup("options").Document().String(); o != wantBare {
		t.Fatalf("defaults = %s", o)
	}
	if specs := indexSpecs(t, db.Collection("bare")); len(specs) != 0 {
		t.Fatalf("listIndexes without metaField = %v", specs)
	}
	custom := bson.D{{Key: "timeField", Value: "t"}, {Key: "bucketMaxSpanSeconds", Value: 600}, {Key: "bucketRoundingSeconds", Value: 600}}
	if err := createTS(t, db, "custom", custom); err != nil {
		t.Fatal(err)
	}
	const wantCustom = `{"timeseries": {"timeField": "t","bucketRoundingSeconds": {"$numberInt":"600"},"bucketMaxSpanSeconds": {"$numberInt":"600"}}}`
	if o := listSpec(t, db, "custom").Lookup("options").Document().String(); o != wantCustom {
		t.Fatalf("custom bucketing = %s", o)
	}
}

func TestTimeseriesCreateErrors(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	cases := []struct {
		name  string
		ts    bson.D
		extra []bson.E
		code  int32
	}{
		{"NoTimeField", bson.D{{Key: "metaField", Value: "m"}}, nil, 40414},
		{"UnknownField", tsOpts(bson.E{Key: "foo", Value: 1}), nil, 40415},
		{"TimeFieldType", bson.D{{Key: "timeField", Value: 1}}, nil, 14},
		{"DottedTimeField", bson.D{{Key: "timeField", Value: "a.b"}}, nil, 72},
		{"MetaFieldID", bson.D{{Key: "timeField", Value: "t"}, {Key: "metaField", Value: "_id"}}, nil, 72},
		{"MetaFieldIsTimeField", bson.D{{Key: "timeField", Value: "t"}, {Key: "metaField", Value: "t"}}, nil, 72},
		{"BadGranularity", tsOpts(bson.E{Key: "granularity", Value: "days"}), nil, 2},
		{"SpanWithGranularity", tsOpts(bson.E{Key: "granularity", Value: "hours"}, bson.E{Key: "bucketMaxSpanSeconds", Value: 10}), nil, 72},
		{"SpanAlone", tsOpts(bson.E{Key: "bucketMaxSpanSeconds", Value: 10}), nil, 72},
		{"SpanNotRounding", tsOpts(bson.E{Key: "bucketMaxSpanSeconds", Value: 10}, bson.E{Key: "bucketRoundingSeconds", Value: 20}), nil, 72},
		{"SpanZero", tsOpts(bson.E{Key: "bucketMaxSpanSeconds", Value: 0}, bson.E{Key: "bucketRoundingSeconds", Value: 0}), nil, 51024},
		{"WithValidator", tsOpts(), []bson.E{{Key: "validator", Value: bson.D{}}}, 72},
		{"WithClustered", tsOpts(), []bson.E{{Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}}}}, 72},
		{"NegativeExpire", tsOpts(), []bson.E{{Key: "expireAfterSeconds", Value: -1}}, 72},
		{"ExpireType", tsOpts(), []bson.E{{Key: "expireAfterSeconds", Value: "x"}}, 14},
	}
	for _, tc := range cases {
		err := createTS(t, db, tc.name, tc.ts, tc.extra...)
		t.Run(tc.name, func(t *testing.T) { wantCode(t, err, tc.code, "") })
	}
	_, err := runCmd(t, db, bson.D{{Key: "create", Value: "x"}, {Key: "expireAfterSeconds", Value: 10}})
	_ = wantCodeName(t, err, 72, "InvalidOptions")
}

func TestTimeseriesWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if err := createTS(t, db, "c", tsOpts()); err != nil {
		t.Fatal(err)
	}
	c := db.Collection("c")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	m := func(id, sec, v int) bson.D {
		return bson.D{{Key: "_id", Value: id}, {Key: "t", Value: t0.Add(time.Duration(sec) * time.Second)}, {Key: "m", Value: "s1"}, {Key: "v", Value: v}}
	}
	// Duplicate _ids, and byte-identical measurements, are all kept.
	docs := []any{m(1, 1, 10), m(1, 2, 20), m(2, 3, 30), m(3, 4, 40), m(3, 4, 40), m(3, 4, 40)}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	count := func(filter bson.D) int64 {
		t.Helper()
		n, err := c.CountDocuments(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(bson.D{}); n != 6 {
		t.Fatalf("count = %d", n)
	}
	if n := count(bson.D{{Key: "_id", Value: 1}}); n != 2 {
		t.Fatalf("count of _id 1 = %d", n)
	}
	_, err := c.InsertOne(ctx, bson.D{{Key: "m", Value: "s1"}})
	wantCode(t, err, 2, "'t' must be present and contain a valid BSON UTC datetime value")
	_, err = c.InsertOne(ctx, bson.D{{Key: "t", Value: "today"}})
	wantCode(t, err, 2, "'t' must be present")
	_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "t", Value: ""}}}})
	wantCode(t, err, 2, "'t' must be present")

	res, err := c.UpdateMany(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}})
	if err != nil || res.MatchedCount != 3 || res.ModifiedCount != 3 {
		t.Fatalf("updateMany of identical measurements: %+v %v", res, err)
	}
	if n := count(bson.D{{Key: "v", Value: 41}}); n != 3 {
		t.Fatalf("updated identical measurements = %d", n)
	}
	if _, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	if n := count(bson.D{{Key: "_id", Value: 3}}); n != 2 {
		t.Fatalf("after deleteOne: %d identical measurements", n)
	}
	cur, err := c.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$_id"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		ID int `bson:"_id"`
		N  int `bson:"n"`
	}
	if err := cur.All(ctx, &groups); err != nil || len(groups) != 3 || groups[0].N != 2 || groups[2].N != 2 {
		t.Fatalf("groups = %+v, %v", groups, err)
	}
	var first bson.M
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "seen", Value: true}}}},
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "t", Value: 1}}).SetReturnDocument(options.After)).Decode(&first)
	if err != nil || first["v"] != int32(10) || first["seen"] != true {
		t.Fatalf("findAndModify = %v, %v", first, err)
	}
	if dr, err := c.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1, 3}}}}}); err != nil || dr.DeletedCount != 4 {
		t.Fatalf("deleteMany = %+v, %v", dr, err)
	}
	if n := count(bson.D{}); n != 1 {
		t.Fatalf("left = %d", n)
	}
}

func TestTimeseriesTTLAndRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--test-commands")
	cl := srv.client(t)
	db := cl.Database("ts")
	if err := createTS(t, db, "c", tsOpts(), bson.E{Key: "expireAfterSeconds", Value: 3600}); err != nil {
		t.Fatal(err)
	}
	c := db.Collection("c")
	old, recent := time.Now().Add(-2*time.Hour), time.Now().Add(-time.Minute)
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: old}},
		bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: recent}},
		bson.D{{Key: "_id", Value: 2}, {Key: "t", Value: old}},
		bson.D{{Key: "_id", Value: 2}, {Key: "t", Value: old}},
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	ttlPass := func() {
		t.Helper()
		if _, err := runCmd(t, cl.Database("admin"), bson.D{{Key: "cleaveTTLMonitor", Value: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	ttlPass()
	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("after TTL: %d measurements, %v", n, err)
	}
	res, err := collMod(t, db, "c", bson.E{Key: "expireAfterSeconds", Value: "off"})
	if err != nil {
		t.Fatalf("expireAfterSeconds off: %v %v", res, err)
	}
	if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 3}, {Key: "t", Value: old}}, bson.D{{Key: "_id", Value: 3}, {Key: "t", Value: old}}}); err != nil {
		t.Fatal(err)
	}
	ttlPass()
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 3 {
		t.Fatalf("TTL off: %d measurements", n)
	}
	if _, err := collMod(t, db, "c", bson.E{Key: "timeseries", Value: bson.D{{Key: "granularity", Value: "hours"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = collMod(t, db, "c", bson.E{Key: "timeseries", Value: bson.D{{Key: "granularity", Value: "minutes"}}})
	_ = wantCodeName(t, err, 72, "InvalidOptions")
	_, err = collMod(t, db, "c", bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "m_1_t_1"}, {Key: "expireAfterSeconds", Value: 1}}})
	_ = wantCodeName(t, err, 72, "InvalidOptions")
	_, err = runCmd(t, cl.Database("admin"), bson.D{{Key: "shardCollection", Value: "ts.c"}, {Key: "key", Value: bson.D{{Key: "m", Value: "hashed"}}}})
	_ = wantCodeName(t, err, 238, "NotImplemented")

	srv.stop()
	srv.restart()
	cl = srv.client(t)
	c = cl.Database("ts").Collection("c")
	const want = `{"timeseries": {"timeField": "t","metaField": "m","granularity": "hours","bucketRoundingSeconds": {"$numberInt":"86400"},"bucketMaxSpanSeconds": {"$numberInt":"2592000"}}}`
	if o := listSpec(t, cl.Database("ts"), "c").Lookup("options").Document().String(); o != want {
		t.Fatalf("options after restart = %s", o)
	}
	if n, err := c.CountDocuments(ctx, bson.D{{Key: "_id", Value: 3}}); err != nil || n != 2 {
		t.Fatalf("identical measurements after restart: %d, %v", n, err)
	}
	if dr, err := c.DeleteMany(ctx, bson.D{{Key: "_id", Value: 3}}); err != nil || dr.DeletedCount != 2 {
		t.Fatalf("deleteMany after restart = %+v, %v", dr, err)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("left after restart = %d", n)
	}
}

// TestTimeseriesIndexScan checks that an index on a measurement field serves queries on a
// time-series collection and finds every measurement, including those sharing an _id and
// identical ones, and that _id equality still finds every measurement with that _id.
func TestTimeseriesIndexScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if err := createTS(t, db, "c", tsOpts()); err != nil {
		t.Fatal(err)
	}
	c := db.Collection("c")
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "v", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var docs []any
	for i := range 30 {
		docs = append(docs, bson.D{{Key: "_id", Value: i % 3}, {Key: "t", Value: t0.Add(time.Duration(i%10) * time.Second)},
			{Key: "m", Value: "s1"}, {Key: "v", Value: i % 10}})
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var x bson.Raw
	err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"},
		{Key: "filter", Value: bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: 5}}}}}}}}).Decode(&x)
	if err != nil {
		t.Fatal(err)
	}
	if s := x.Lookup("queryPlanner", "winningPlan").String(); !strings.Contains(s, "IXSCAN") {
		t.Errorf("the index on v is not used: %s", s)
	}
	for _, tc := range []struct {
		filter bson.D
		want   int64
	}{
		{bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: 5}}}}, 15},
		{bson.D{{Key: "v", Value: 7}}, 3},
		{bson.D{{Key: "_id", Value: 1}}, 10},
		{bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1}}, 1},
	} {
		if n, err := c.CountDocuments(ctx, tc.filter); err != nil || n != tc.want {
			t.Errorf("count %v = %d, %v; want %d", tc.filter, n, err, tc.want)
		}
	}
}
