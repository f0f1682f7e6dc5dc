package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// clusteredOn is the clusteredIndex option {key: {_id: 1}, unique: true, ...extra}.
func clusteredOn(extra ...bson.E) bson.D {
	return append(bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}}, extra...)
}

// createClustered runs {create: name, clusteredIndex: spec, ...extra}.
func createClustered(t *testing.T, db *mongo.Database, name string, spec any, extra ...bson.E) error {
	t.Helper()
	_, err := runCmd(t, db, append(bson.D{{Key: "create", Value: name}, {Key: "clusteredIndex", Value: spec}}, extra...))
	return err
}

func TestClusteredCreateAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if err := createClustered(t, db, "named", clusteredOn(bson.E{Key: "name", Value: "by id"})); err != nil {
		t.Fatal(err)
	}
	spec := listSpec(t, db, "named")
	const want = `{"clusteredIndex": {"v": {"$numberInt":"2"},"key": {"_id": {"$numberInt":"1"}},"name": "by id","unique": true}}`
	if o := spec.Lookup("options").Document().String(); o != want || spec.Lookup("type").StringValue() != "collection" {
		t.Fatalf("spec = %s", spec)
	}
	if _, err := spec.LookupErr("idIndex"); err == nil {
		t.Fatalf("idIndex listed: %s", spec)
	}
	specs := indexSpecs(t, db.Collection("named"))
	if s := specs["by id"]; len(specs) != 1 || s["clustered"] != true || s["unique"] != true || s["v"] != int32(2) {
		t.Fatalf("listIndexes = %v", specs)
	}
	if err := createClustered(t, db, "plain", clusteredOn()); err != nil {
		t.Fatal(err)
	}
	if specs := indexSpecs(t, db.Collection("plain")); specs["_id_"]["clustered"] != true {
		t.Fatalf("default name: %v", specs)
	}
	c := db.Collection("plain")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	wantCode(t, err, 11000, "dup key: { _id: 1 }")
	if n, err := c.CountDocuments(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 1}}}}); err != nil || n != 1 {
		t.Fatalf("range on _id = %d, %v", n, err)
	}
	_, err = collMod(t, db, "named", bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "by id"}, {Key: "hidden", Value: true}}})
	_ = wantCodeName(t, err, 6011800, "Location6011800")
}

func TestClusteredCreateErrors(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	cases := []struct {
		name  string
		spec  any
		extra []bson.E
		code  int32
	}{
		{"NotUnique", bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: false}}, nil, 5979700},
		{"NoUnique", bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}}, nil, 40414},
		{"NoKey", bson.D{{Key: "unique", Value: true}}, nil, 40414},
		{"OtherKey", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "unique", Value: true}}, nil, 197},
		{"Descending", bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: -1}}}, {Key: "unique", Value: true}}, nil, 197},
		{"Version1", clusteredOn(bson.E{Key: "v", Value: 1}), nil, 5979704},
		{"UnknownField", clusteredOn(bson.E{Key: "sparse", Value: true}), nil, 40415},
		{"LegacyTrue", true, nil, 5979703},
		{"WrongType", "yes", nil, 14},
		{"Size", clusteredOn(), []bson.E{{Key: "size", Value: 1024}}, 6049200},
		{"NegativeExpire", clusteredOn(), []bson.E{{Key: "expireAfterSeconds", Value: -5}}, 72},
	}
	for _, tc := range cases {
		err := createClustered(t, db, tc.name, tc.spec, tc.extra...)
		t.Run(tc.name, func(t *testing.T) { wantCode(t, err, tc.code, "") })
	}
}

func TestClusteredTTLAndRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, "--test-commands")
	cl := srv.client(t)
	db := cl.Database("cl")
	if err := createClustered(t, db, "c", clusteredOn(), bson.E{Key: "expireAfterSeconds", Value: 3600}); err != nil {
		t.Fatal(err)
	}
	c := db.Collection("c")
	old, recent := time.Now().Add(-2*time.Hour), time.Now().Add(-time.Minute)
	if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: old}}, bson.D{{Key: "_id", Value: recent}}, bson.D{{Key: "_id", Value: 7}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, cl.Database("admin"), bson.D{{Key: "cleaveTTLMonitor", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("after TTL: %d documents, %v", n, err)
	}
	if _, err := collMod(t, db, "c", bson.E{Key: "expireAfterSeconds", Value: 7200}); err != nil {
		t.Fatal(err)
	}
	_, err := collMod(t, db, "c", bson.E{Key: "expireAfterSeconds", Value: "never"})
	_ = wantCodeName(t, err, 72, "InvalidOptions")
	srv.stop()
	srv.restart()
	db = srv.client(t).Database("cl")
	const want = `{"clusteredIndex": {"v": {"$numberInt":"2"},"key": {"_id": {"$numberInt":"1"}},"name": "_id_","unique": true},"expireAfterSeconds": {"$numberLong":"7200"}}`
	if o := listSpec(t, db, "c").Lookup("options").Document().String(); o != want {
		t.Fatalf("options after restart = %s", o)
	}
	if _, err := collMod(t, db, "c", bson.E{Key: "expireAfterSeconds", Value: "off"}); err != nil {
		t.Fatal(err)
	}
	if _, err := listSpec(t, db, "c").Lookup("options").Document().LookupErr("expireAfterSeconds"); err == nil {
		t.Fatal("expireAfterSeconds still listed after off")
	}
	if n, err := db.Collection("c").CountDocuments(ctx, bson.D{{Key: "_id", Value: 7}}); err != nil || n != 1 {
		t.Fatalf("find by _id after restart = %d, %v", n, err)
	}
}
