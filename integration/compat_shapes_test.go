package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Fields clients read from diagnostic replies: present, with MongoDB's BSON types.

// TestServerStatusCompatCatalogStats: serverStatus carries catalogStats with MongoDB's nine
// fields (ints), counted from the catalog: user collections (capped and clustered among
// them), time-series collections, views, and internal collections and views (admin,
// config, local, system.*).
func TestServerStatusCompatCatalogStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startServer(t).client(t)
	db := c.Database(dbName(t))
	for _, cmd := range []bson.D{
		{{Key: "create", Value: "plain"}},
		{{Key: "create", Value: "capped"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}},
		{{Key: "create", Value: "clustered"}, {Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}}}},
		{{Key: "create", Value: "ts"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}}},
		{{Key: "create", Value: "view"}, {Key: "viewOn", Value: "plain"}, {Key: "pipeline", Value: bson.A{}}},
	} {
		if err := db.RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "create", Value: "internal"}}).Err(); err != nil {
		t.Fatal(err)
	}
	var status bson.Raw
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&status); err != nil {
		t.Fatal(err)
	}
	stats, ok := status.Lookup("catalogStats").DocumentOK()
	if !ok {
		t.Fatalf("no catalogStats: %v", status)
	}
	// admin's own collections (users, roles) may count among internalCollections too.
	want := []struct {
		key string
		min int32
		max int32
	}{
		{"collections", 3, 3}, {"capped", 1, 1}, {"clustered", 1, 1}, {"timeseries", 1, 1}, {"views", 1, 1},
		{"internalCollections", 1, 10}, {"internalViews", 0, 0}, {"csfle", 0, 0}, {"queryableEncryption", 0, 0},
	}
	elems, _ := stats.Elements()
	if len(elems) != len(want) {
		t.Fatalf("catalogStats = %v, want the fields %v", stats, want)
	}
	for i, w := range want {
		n, ok := elems[i].Value().Int32OK()
		if elems[i].Key() != w.key || !ok || n < w.min || n > w.max {
			t.Errorf("catalogStats field %d = %v, want %s: int in [%d, %d]", i, elems[i], w.key, w.min, w.max)
		}
	}
}

// TestExplainCompatServerInfo: every explain, whichever command it explains and whether the
// collection is sharded or not, starts with explainVersion and carries serverInfo {host,
// port, version, gitVersion}, as a mongos answers.
func TestExplainCompatServerInfo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startServer(t, "--shards", "2").client(t)
	db := c.Database(dbName(t))
	if _, err := db.Collection("plain").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: dbName(t) + ".sharded"},
		{Key: "key", Value: bson.D{{Key: "a", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("sharded").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	filter := bson.D{{Key: "a", Value: 1}}
	for _, coll := range []string{"plain", "sharded"} {
		inner := map[string]bson.D{
			"Find":          {{Key: "find", Value: coll}, {Key: "filter", Value: filter}},
			"Aggregate":     {{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: filter}}}}, {Key: "cursor", Value: bson.D{}}},
			"Count":         {{Key: "count", Value: coll}, {Key: "query", Value: filter}},
			"Distinct":      {{Key: "distinct", Value: coll}, {Key: "key", Value: "a"}},
			"Update":        {{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: filter}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}}}}}},
			"Delete":        {{Key: "delete", Value: coll}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: filter}, {Key: "limit", Value: 1}}}}},
			"FindAndModify": {{Key: "findAndModify", Value: coll}, {Key: "query", Value: filter}, {Key: "remove", Value: true}},
		}
		cmds := map[string]bson.D{
			"AggregateExplainTrue": {{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: bson.A{}}, {Key: "explain", Value: true}},
		}
		for name, cmd := range inner {
			for _, verbosity := range []string{"queryPlanner", "executionStats"} {
				cmds[name+verbosity] = bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: verbosity}}
			}
		}
		for name, cmd := range cmds {
			t.Run(coll+"/"+name, func(t *testing.T) {
				var reply bson.Raw
				if err := db.RunCommand(ctx, cmd).Decode(&reply); err != nil {
					t.Fatal(err)
				}
				elems, _ := reply.Elements()
				if v, ok := elems[0].Value().StringValueOK(); elems[0].Key() != "explainVersion" || !ok || v != "1" {
					t.Errorf("first field %v, want explainVersion: \"1\"", elems[0])
				}
				info, ok := reply.Lookup("serverInfo").DocumentOK()
				if !ok {
					t.Fatalf("no serverInfo: %v", reply)
				}
				if _, ok := info.Lookup("host").StringValueOK(); !ok {
					t.Errorf("serverInfo.host: %v", info)
				}
				if port, ok := info.Lookup("port").Int32OK(); !ok || port == 0 {
					t.Errorf("serverInfo.port: %v", info)
				}
				if v, ok := info.Lookup("version").StringValueOK(); !ok || v == "" {
					t.Errorf("serverInfo.version: %v", info)
				}
				if _, ok := info.Lookup("gitVersion").StringValueOK(); !ok {
					t.Errorf("serverInfo.gitVersion: %v", info)
				}
			})
		}
	}
}

// TestGetParameterCompatDetails: showDetails and allParameters are MongoDB's safeBool (1
// is true), and authSchemaVersion is 5.
func TestGetParameterCompatDetails(t *testing.T) {
	t.Parallel()
	admin := sharedServer(t).client(t).Database("admin")
	var reply bson.Raw
	err := admin.RunCommand(context.Background(), bson.D{{Key: "getParameter", Value: bson.D{{Key: "showDetails", Value: 1}}},
		{Key: "cursorTimeoutMillis", Value: 1}}).Decode(&reply)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := reply.Lookup("cursorTimeoutMillis", "settableAtRuntime").BooleanOK(); !ok {
		t.Errorf("showDetails: 1 gave no details: %v", reply)
	}
	if err := admin.RunCommand(context.Background(), bson.D{{Key: "getParameter", Value: 1}, {Key: "authSchemaVersion", Value: 1}}).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	if v, ok := reply.Lookup("authSchemaVersion").Int32OK(); !ok || v != 5 {
		t.Errorf("authSchemaVersion: %v", reply)
	}
}

// TestValidateCompatCountTypes: validate's nInvalidDocuments, nNonCompliantDocuments,
// nrecords and keysPerIndex are ints, as mongod's appendNumber writes small numbers.
func TestValidateCompatCountTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	var reply bson.Raw
	if err := db.RunCommand(ctx, bson.D{{Key: "validate", Value: "c"}}).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	for _, path := range [][]string{{"nInvalidDocuments"}, {"nNonCompliantDocuments"}, {"nrecords"}, {"keysPerIndex", "_id_"}} {
		if v := reply.Lookup(path...); v.Type != bson.TypeInt32 {
			t.Errorf("%v is %v (%s), want an int", path, v, v.Type)
		}
	}
}

// TestCollStatsCompatMissing: collStats of a collection that does not exist answers mongod's
// shape for it: zeros as ints, empty indexDetails and indexSizes, scaleFactor, and no
// freeStorageSize (nor avgObjSize, capped, indexBuilds).
func TestCollStatsCompatMissing(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	var reply bson.D
	if err := db.RunCommand(context.Background(), bson.D{{Key: "collStats", Value: "missing"}}).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	want := `{"sharded":false,"ns":"` + dbName(t) + `.missing","size":{"$numberInt":"0"},"count":{"$numberInt":"0"},` +
		`"numOrphanDocs":{"$numberInt":"0"},"storageSize":{"$numberInt":"0"},"totalSize":{"$numberInt":"0"},` +
		`"nindexes":{"$numberInt":"0"},"totalIndexSize":{"$numberInt":"0"},"indexDetails":{},"indexSizes":{},` +
		`"scaleFactor":{"$numberInt":"1"},"ok":{"$numberDouble":"1.0"}}`
	if got := wrCanonical(t, reply); got != want {
		t.Errorf("collStats of a missing collection:\n got %s\nwant %s", got, want)
	}
}
