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

// wantCode fails the test unless err is a server error with the given code (and, if msg is
// not empty, a message containing msg).
func wantCode(t *testing.T, err error, code int32, msg string) {
	t.Helper()
	var ce mongo.CommandError
	var we mongo.WriteException
	switch {
	case errors.As(err, &ce):
		if ce.Code != code || !strings.Contains(ce.Message, msg) {
			t.Fatalf("got error %d %q, want %d containing %q", ce.Code, ce.Message, code, msg)
		}
	case errors.As(err, &we) && len(we.WriteErrors) > 0:
		e := we.WriteErrors[0]
		if int32(e.Code) != code || !strings.Contains(e.Message, msg) {
			t.Fatalf("got write error %d %q, want %d containing %q", e.Code, e.Message, code, msg)
		}
	default:
		t.Fatalf("got %v, want a server error with code %d", err, code)
	}
}

// runCmd runs a command on db and decodes its reply.
func runCmd(t *testing.T, db *mongo.Database, cmd bson.D) (bson.M, error) {
	t.Helper()
	var res bson.M
	err := db.RunCommand(context.Background(), cmd).Decode(&res)
	return res, err
}

// asM returns a decoded sub-document as a bson.M (the driver decodes them as bson.D).
func asM(v any) bson.M {
	switch d := v.(type) {
	case bson.M:
		return d
	case bson.D:
		m := bson.M{}
		for _, e := range d {
			m[e.Key] = e.Value
		}
		return m
	}
	return nil
}

// collNames lists the collection names of db.
func collNames(t *testing.T, db *mongo.Database) []string {
	t.Helper()
	names, err := db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatalf("listCollections: %v", err)
	}
	return names
}

func TestDDLCreateOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	validator := bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 0}}}}
	opts := options.CreateCollection().SetValidator(validator)
	if err := db.CreateCollection(ctx, "v", opts); err != nil {
		t.Fatalf("create: %v", err)
	}
	// MongoDB 7.0: the same options again succeed; others fail with NamespaceExists.
	if err := db.CreateCollection(ctx, "v", opts); err != nil {
		t.Fatalf("create again: %v", err)
	}
	err := db.CreateCollection(ctx, "v")
	wantCode(t, err, 48, "Collection "+dbName(t)+".v already exists.")

	cur, err := db.ListCollections(ctx, bson.D{{Key: "name", Value: "v"}})
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.M
	if err := cur.All(ctx, &specs); err != nil || len(specs) != 1 {
		t.Fatalf("listCollections: %v %v", specs, err)
	}
	o := asM(specs[0]["options"])
	if o["validationLevel"] != "strict" || o["validationAction"] != "error" || o["validator"] == nil {
		t.Errorf("options = %v", o)
	}
	info := asM(specs[0]["info"])
	if u, ok := info["uuid"].(bson.Binary); !ok || u.Subtype != 4 || len(u.Data) != 16 || info["readOnly"] != false {
		t.Errorf("info = %v", info)
	}
	if specs[0]["type"] != "collection" || asM(specs[0]["idIndex"])["name"] != "_id_" {
		t.Errorf("spec = %v", specs[0])
	}

	cases := []struct {
		name string
		cmd  bson.D
		code int32
	}{
		{"CappedNoSize", bson.D{{Key: "create", Value: "c1"}, {Key: "capped", Value: true}}, 72},
		{"CappedSizeZero", bson.D{{Key: "create", Value: "c2"}, {Key: "capped", Value: true}, {Key: "size", Value: 0}}, 51024},
		{"TimeseriesNoTimeField", bson.D{{Key: "create", Value: "c3"}, {Key: "timeseries", Value: bson.D{{Key: "metaField", Value: "m"}}}}, 40414},
		{"ClusteredNotUnique", bson.D{{Key: "create", Value: "c4"}, {Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: false}}}}, 5979700},
		{"Collation", bson.D{{Key: "create", Value: "c5"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}}, 238},
		{"UnknownOption", bson.D{{Key: "create", Value: "c6"}, {Key: "foo", Value: 1}}, 40415},
		{"BadName", bson.D{{Key: "create", Value: "a$b"}}, 73},
		{"BadLevel", bson.D{{Key: "create", Value: "c7"}, {Key: "validationLevel", Value: "x"}}, 2},
	}
	for _, tc := range cases {
		_, err := runCmd(t, db, tc.cmd)
		t.Run(tc.name, func(t *testing.T) { wantCode(t, err, tc.code, "") })
	}
	if _, err := runCmd(t, db, bson.D{{Key: "create", Value: "simple"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}}); err != nil {
		t.Errorf("simple collation: %v", err)
	}
}

func TestDDLDropRecreate(t *testing.T) {
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
	res, err := runCmd(t, db, bson.D{{Key: "drop", Value: "c"}})
	if err != nil || res["nIndexesWas"] != int32(2) || res["ns"] != dbName(t)+".c" {
		t.Fatalf("drop = %v, %v", res, err)
	}
	// mongos 7.0 answers ok to dropping a missing collection.
	if err := c.Drop(ctx); err != nil {
		t.Fatalf("drop missing: %v", err)
	}
	if _, err := runCmd(t, db, bson.D{{Key: "drop", Value: "c"}}); err != nil {
		t.Fatalf("drop command on a missing collection: %v", err)
	}
	if names := collNames(t, db); len(names) != 0 {
		t.Fatalf("collections after drop: %v", names)
	}
	if err := db.CreateCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := countFind(t, c, bson.D{}, nil); n != 0 {
		t.Fatalf("count after recreate = %d", n)
	}
	idx, err := c.Indexes().ListSpecifications(ctx)
	if err != nil || len(idx) != 1 {
		t.Fatalf("indexes after recreate = %v, %v", idx, err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if n := countFind(t, c, bson.D{{Key: "a", Value: 1}}, nil); n != 1 {
		t.Fatalf("count = %d", n)
	}
}

func TestDDLListAndDropDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := sharedServer(t).client(t)
	name := dbName(t)
	db := cl.Database(name)
	for _, coll := range []string{"a", "b"} {
		if _, err := db.Collection(coll).InsertOne(ctx, bson.D{{Key: "x", Value: strings.Repeat("y", 1000)}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := cl.ListDatabases(ctx, bson.D{{Key: "name", Value: name}})
	if err != nil || len(res.Databases) != 1 {
		t.Fatalf("listDatabases = %+v, %v", res, err)
	}
	if d := res.Databases[0]; d.Name != name || d.SizeOnDisk <= 0 || d.Empty {
		t.Errorf("database = %+v", d)
	}
	if res.TotalSize <= 0 {
		t.Errorf("totalSize = %d", res.TotalSize)
	}
	names, err := cl.ListDatabaseNames(ctx, bson.D{{Key: "name", Value: name}})
	if err != nil || len(names) != 1 || names[0] != name {
		t.Fatalf("nameOnly = %v, %v", names, err)
	}
	_, err = runCmd(t, db, bson.D{{Key: "listDatabases", Value: 1}})
	wantCode(t, err, 13, "listDatabases may only be run against the admin database.")

	if r, err := runCmd(t, db, bson.D{{Key: "dropDatabase", Value: 1}}); err != nil || r["dropped"] != name {
		t.Fatalf("dropDatabase = %v, %v", r, err)
	}
	names, _ = cl.ListDatabaseNames(ctx, bson.D{{Key: "name", Value: name}})
	if len(names) != 0 || len(collNames(t, db)) != 0 {
		t.Fatalf("after dropDatabase: %v", names)
	}
	if err := db.Drop(ctx); err != nil {
		t.Fatalf("dropping a missing database: %v", err)
	}
	if n := countFind(t, db.Collection("a"), bson.D{}, nil); n != 0 {
		t.Fatalf("data survived dropDatabase: %d", n)
	}
}

func TestDDLListCollections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	for _, n := range []string{"x1", "x2", "y"} {
		if err := db.CreateCollection(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$regex", Value: "^x"}}}})
	if err != nil || strings.Join(names, ",") != "x1,x2" {
		t.Fatalf("filtered names = %v, %v", names, err)
	}
	res, err := runCmd(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "nameOnly", Value: true}})
	if err != nil {
		t.Fatal(err)
	}
	cur := asM(res["cursor"])
	batch := cur["firstBatch"].(bson.A)
	if cur["ns"] != dbName(t)+".$cmd.listCollections" || cur["id"] != int64(0) || len(batch) != 3 {
		t.Fatalf("cursor = %v", cur)
	}
	if first := asM(batch[0]); len(first) != 2 || first["type"] != "collection" {
		t.Errorf("nameOnly entry = %v", first)
	}
	empty := db.Client().Database(dbName(t) + "_none")
	if names := collNames(t, empty); len(names) != 0 {
		t.Errorf("missing database lists %v", names)
	}
}

func TestDDLRenameCollection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := sharedServer(t).client(t)
	name := dbName(t)
	db, admin := cl.Database(name), cl.Database("admin")
	if _, err := db.Collection("a").InsertOne(ctx, bson.D{{Key: "k", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("a").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	rename := func(from, to string, dropTarget bool) error {
		_, err := runCmd(t, admin, bson.D{{Key: "renameCollection", Value: name + "." + from},
			{Key: "to", Value: name + "." + to}, {Key: "dropTarget", Value: dropTarget}})
		return err
	}
	if err := rename("a", "b", false); err != nil {
		t.Fatalf("rename: %v", err)
	}
	var doc bson.M
	if err := db.Collection("b").FindOne(ctx, bson.D{{Key: "k", Value: 1}}).Decode(&doc); err != nil {
		t.Fatalf("find in renamed: %v", err)
	}
	if idx, _ := db.Collection("b").Indexes().ListSpecifications(ctx); len(idx) != 2 {
		t.Errorf("indexes after rename = %v", idx)
	}
	wantCode(t, rename("a", "c", false), 26, "Source collection "+name+".a does not exist")
	if err := db.CreateCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, rename("b", "c", false), 48, "target namespace exists")
	if err := rename("b", "c", true); err != nil {
		t.Fatalf("rename with dropTarget: %v", err)
	}
	if n := countFind(t, db.Collection("c"), bson.D{}, nil); n != 1 {
		t.Errorf("count after dropTarget rename = %d", n)
	}
	_, err := runCmd(t, db, bson.D{{Key: "renameCollection", Value: name + ".c"}, {Key: "to", Value: name + ".d"}})
	wantCode(t, err, 13, "")
}

func TestDDLCollStatsAndDBStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("s")
	docs := make([]any, 100)
	for i := range docs {
		docs[i] = bson.D{{Key: "i", Value: i}, {Key: "pad", Value: strings.Repeat("p", 100)}}
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "i", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	st, err := runCmd(t, db, bson.D{{Key: "collStats", Value: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	if st["ns"] != dbName(t)+".s" || st["count"] != int32(100) || st["nindexes"] != int32(2) || st["sharded"] != false {
		t.Errorf("collStats = %v", st)
	}
	if size, _ := st["size"].(int32); size < 100*100 || st["avgObjSize"].(int32) != size/100 {
		t.Errorf("collStats size = %v avgObjSize = %v", st["size"], st["avgObjSize"])
	}
	if sizes := asM(st["indexSizes"]); len(sizes) != 2 || sizes["i_1"] == nil {
		t.Errorf("indexSizes = %v", sizes)
	}
	ds, err := runCmd(t, db, bson.D{{Key: "dbStats", Value: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if ds["db"] != dbName(t) || ds["collections"] != int64(1) || ds["objects"] != int64(100) || ds["indexes"] != int64(2) ||
		ds["scaleFactor"] != int64(1) || ds["freeStorageSize"] != nil {
		t.Errorf("dbStats = %v (counts are longs, as mongos answers)", ds)
	}
	ds, err = runCmd(t, db, bson.D{{Key: "dbStats", Value: 1}, {Key: "freeStorage", Value: 1}})
	if err != nil || ds["freeStorageSize"] != 0.0 || ds["totalFreeStorageSize"] != 0.0 {
		t.Errorf("dbStats with freeStorage: %v %v", ds, err)
	}
	if n, err := c.EstimatedDocumentCount(ctx); err != nil || n != 100 {
		t.Errorf("estimatedDocumentCount = %d, %v", n, err)
	}
}

func TestDDLRestartKeepsCollectionsAndIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t)
	db := srv.client(t).Database("restart")
	c := db.Collection("c")
	if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "u", Value: 1}}, bson.D{{Key: "u", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	unique := mongo.IndexModel{Keys: bson.D{{Key: "u", Value: 1}}, Options: options.Index().SetUnique(true)}
	if _, err := c.Indexes().CreateOne(ctx, unique); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection(ctx, "empty"); err != nil {
		t.Fatal(err)
	}
	if err := db.Collection("gone").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	srv.restart()
	db = srv.client(t).Database("restart")
	c = db.Collection("c")
	if names := collNames(t, db); strings.Join(names, ",") != "c,empty" && strings.Join(names, ",") != "empty,c" {
		t.Fatalf("collections after restart: %v", names)
	}
	specs, err := c.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 || specs[1].Name != "u_1" || specs[1].Unique == nil || !*specs[1].Unique {
		t.Fatalf("indexes after restart: %+v, %v", specs, err)
	}
	_, err = c.InsertOne(ctx, bson.D{{Key: "u", Value: 2}})
	wantCode(t, err, 11000, "index: u_1 dup key: { u: 2 }")
	var doc bson.M
	if err := c.FindOne(ctx, bson.D{{Key: "u", Value: 2}}).Decode(&doc); err != nil {
		t.Fatalf("find by index after restart: %v", err)
	}
}
