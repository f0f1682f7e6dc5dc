package exec

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// cosmosConn returns a connection to an executor over two shards whose manager does not run
// rounds by itself, so that every split the tests see comes from the commands.
func cosmosConn(t *testing.T) wire.ConnHandler {
	t.Helper()
	e := testExecutor(t, 2, Options{PartitionCheckInterval: time.Hour})
	return e.Connect(wire.ConnInfo{ID: 1})
}

// cosmosRun runs cmd (Extended JSON) on database db and returns the reply, {ok: 0} included.
func cosmosRun(t *testing.T, c wire.ConnHandler, db, cmd string) bsoncore.Document {
	t.Helper()
	reply, err := fpHandle(t, c, db, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

// cosmosOK runs cmd and fails the test unless it answers ok: 1.
func cosmosOK(t *testing.T, c wire.ConnHandler, db, cmd string) bsoncore.Document {
	t.Helper()
	reply := cosmosRun(t, c, db, cmd)
	if code := fpReplyCode(reply); code != 0 {
		t.Fatalf("%s: %v", cmd, reply)
	}
	return reply
}

// cosmosFails runs cmd and checks its error code and that its message holds want.
func cosmosFails(t *testing.T, c wire.ConnHandler, db, cmd string, code mongoerr.Code, want string) {
	t.Helper()
	reply := cosmosRun(t, c, db, cmd)
	msg, _ := reply.Lookup("errmsg").StringValueOK()
	if fpReplyCode(reply) != int32(code) || !strings.Contains(msg, want) {
		t.Errorf("%s: %v; want code %d and %q", cmd, reply, code, want)
	}
	if name, _ := reply.Lookup("codeName").StringValueOK(); fpReplyCode(reply) != 0 && name != code.String() {
		t.Errorf("%s: codeName %q, want %q", cmd, name, code.String())
	}
}

// int32Of returns an int32 field of a reply (dotted paths allowed), failing on another type.
func int32Of(t *testing.T, reply bsoncore.Document, path ...string) int32 {
	t.Helper()
	v, err := reply.LookupErr(path...)
	n, ok := v.Int32OK()
	if err != nil || !ok {
		t.Fatalf("%s: %v is not an int32 in %v", strings.Join(path, "."), v, reply)
	}
	return n
}

func TestCosmosCreateCollectionPartitions(t *testing.T) {
	c := cosmosConn(t)
	cosmosOK(t, c, "cosmos", `{"customAction": "CreateCollection", "collection": "coll", "shardKey": "deviceId", "offerThroughput": 25000,
		"indexes": [{"key": {"_id": 1}, "name": "_id_1"}, {"key": {"ts": 1}, "name": "ts_1"}]}`)
	r := cosmosOK(t, c, "cosmos", `{"customAction": "GetCollection", "collection": "coll"}`)
	if n := int32Of(t, r, "numPartitions"); n != 3 {
		t.Errorf("numPartitions %d, want 3", n)
	}
	if n := int32Of(t, r, "provisionedThroughput"); n != 25000 {
		t.Errorf("provisionedThroughput %d", n)
	}
	if db, _ := r.Lookup("database").StringValueOK(); db != "cosmos" {
		t.Errorf("database %q", db)
	}
	if coll, _ := r.Lookup("collection").StringValueOK(); coll != "coll" {
		t.Errorf("collection %q", coll)
	}
	if k, _ := r.Lookup("shardKeyDefinition", "deviceId").StringValueOK(); k != "hashed" {
		t.Errorf("shardKeyDefinition %v", r.Lookup("shardKeyDefinition"))
	}
	if _, err := r.LookupErr("autoScaleSettings"); err == nil {
		t.Errorf("a manual collection answers autoScaleSettings: %v", r)
	}
	idx := cosmosOK(t, c, "cosmos", `{"listIndexes": "coll"}`)
	if names := fmt.Sprint(idx.Lookup("cursor", "firstBatch")); !strings.Contains(names, `"ts_1"`) || strings.Contains(names, `"_id_1"`) {
		t.Errorf("indexes after CreateCollection: %s", names)
	}
	cosmosFails(t, c, "cosmos", `{"customAction": "CreateCollection", "collection": "coll", "shardKey": "deviceId"}`,
		mongoerr.NamespaceExists, "already exists")
}

func TestCosmosCreateCollectionLimits(t *testing.T) {
	c := cosmosConn(t)
	cosmosFails(t, c, "cosmos", `{"customAction": "CreateCollection", "collection": "big", "offerThroughput": 10100}`,
		mongoerr.BadValue, "at most 10000 RU/s")
	cosmosFails(t, c, "cosmos", `{"customAction": "CreateCollection", "collection": "big", "autoScaleSettings": {"maxThroughput": 20000}}`,
		mongoerr.BadValue, "Provisioned throughput collection should have a partition key")
	cosmosFails(t, c, "cosmos", `{"customAction": "CreateCollection", "collection": "small", "shardKey": "k", "offerThroughput": 300}`,
		mongoerr.BadValue, "between 400 and 1000000")
	cosmosFails(t, c, "cosmos", `{"customAction": "CreateCollection", "collection": "small", "shardKey": "k", "autoScaleSettings": {"maxThroughput": 500}}`,
		mongoerr.BadValue, "between 1000 and 1000000")
	cosmosFails(t, c, "cosmos", `{"customAction": "CreateCollection", "collection": "both", "offerThroughput": 400, "autoScaleSettings": {"maxThroughput": 4000}}`,
		mongoerr.BadValue, "cannot both")
	cosmosFails(t, c, "cosmos", `{"customAction": "CreateCollection", "collection": "x", "shardKey": "$bad"}`,
		mongoerr.BadValue, "Unsupported shard key pattern")
	cosmosFails(t, c, "cosmos", `{"customAction": "DropEverything"}`, mongoerr.CommandNotFound, "no such customAction")
	if r := cosmosRun(t, c, "cosmos", `{"listCollections": 1}`); strings.Contains(fmt.Sprint(r), "big") || strings.Contains(fmt.Sprint(r), "small") {
		t.Errorf("a refused CreateCollection left a collection: %v", r)
	}
	// Up to t without a shard key is fine, and so is the minimum.
	cosmosOK(t, c, "cosmos", `{"customAction": "CreateCollection", "collection": "fixed", "offerThroughput": 10000}`)
	cosmosOK(t, c, "cosmos", `{"customAction": "CreateCollection", "collection": "min", "shardKey": "/a/b", "offerThroughput": 400}`)
	r := cosmosOK(t, c, "cosmos", `{"customAction": "GetCollection", "collection": "min"}`)
	// Two shards: a sharded collection starts with a partition on each (shard.InitialCount).
	if k, _ := r.Lookup("shardKeyDefinition", "a.b").StringValueOK(); k != "hashed" || int32Of(t, r, "numPartitions") != 2 {
		t.Errorf("GetCollection of a /a/b shard key: %v", r)
	}
	cosmosFails(t, c, "cosmos", `{"customAction": "UpdateCollection", "collection": "fixed", "offerThroughput": 20000}`,
		mongoerr.BadValue, "Provisioned throughput collection should have a partition key")
	cosmosFails(t, c, "cosmos", `{"customAction": "UpdateCollection", "collection": "nope", "offerThroughput": 1000}`,
		mongoerr.NamespaceNotFound, "ns not found")
	cosmosFails(t, c, "cosmos", `{"customAction": "GetCollection", "collection": "nope"}`, mongoerr.NamespaceNotFound, "ns not found")
}

func TestCosmosUpdateCollectionSplits(t *testing.T) {
	c := cosmosConn(t)
	cosmosOK(t, c, "cosmos", `{"customAction": "CreateCollection", "collection": "coll", "shardKey": "deviceId", "offerThroughput": 25000}`)
	docs := make([]string, 500)
	for i := range docs {
		docs[i] = fmt.Sprintf(`{"_id": %d, "deviceId": "dev-%03d", "v": %d}`, i, i%100, i)
	}
	cosmosOK(t, c, "cosmos", `{"insert": "coll", "documents": [`+strings.Join(docs, ",")+`]}`)
	cosmosOK(t, c, "cosmos", `{"customAction": "UpdateCollection", "collection": "coll", "offerThroughput": 45000}`)
	r := cosmosOK(t, c, "cosmos", `{"customAction": "GetCollection", "collection": "coll"}`)
	if n := int32Of(t, r, "numPartitions"); n != 5 {
		t.Fatalf("numPartitions %d after raising to 45000, want 5", n)
	}
	if n := int32Of(t, r, "provisionedThroughput"); n != 45000 {
		t.Errorf("provisionedThroughput %d", n)
	}
	if n := int32Of(t, cosmosOK(t, c, "cosmos", `{"count": "coll"}`), "n"); n != 500 {
		t.Errorf("count after the split: %d, want 500", n)
	}
	for _, dev := range []string{"dev-000", "dev-042", "dev-099"} {
		if n := int32Of(t, cosmosOK(t, c, "cosmos", `{"count": "coll", "query": {"deviceId": "`+dev+`"}}`), "n"); n != 5 {
			t.Errorf("count of %s after the split: %d, want 5", dev, n)
		}
	}
	// Lowering merges adjacent partitions of one shard toward ceil(T/t) = 2: of the five,
	// on two shards, the two pairs that share a shard; autoscale is stored and answered as
	// Cosmos DB does.
	cosmosOK(t, c, "cosmos", `{"customAction": "UpdateCollection", "collection": "coll", "autoScaleSettings": {"maxThroughput": 20000}}`)
	r = cosmosOK(t, c, "cosmos", `{"customAction": "GetCollection", "collection": "coll"}`)
	if int32Of(t, r, "numPartitions") != 3 || int32Of(t, r, "autoScaleSettings", "maxThroughput") != 20000 ||
		int32Of(t, r, "provisionedThroughput") != 2000 {
		t.Errorf("GetCollection after lowering to autoscale 20000: %v", r)
	}
	cosmosOK(t, c, "cosmos", `{"customAction": "UpdateCollection", "collection": "coll", "autoScaleSettings": {"maxThroughput": 61000}}`)
	if n := int32Of(t, cosmosOK(t, c, "cosmos", `{"customAction": "GetCollection", "collection": "coll"}`), "numPartitions"); n != 7 {
		t.Errorf("numPartitions %d after autoscale 61000, want 7", n)
	}
	if n := int32Of(t, cosmosOK(t, c, "cosmos", `{"count": "coll", "query": {"deviceId": "dev-007"}}`), "n"); n != 5 {
		t.Errorf("count by shard key after the second split: %d", n)
	}
	cosmosFails(t, c, "cosmos", `{"customAction": "UpdateCollection", "collection": "coll", "indexes": []}`,
		mongoerr.NotImplemented, "indexes")
}

func TestCosmosDatabaseThroughput(t *testing.T) {
	c := cosmosConn(t)
	cosmosOK(t, c, "shared", `{"customAction": "CreateDatabase", "offerThroughput": 1000}`)
	r := cosmosOK(t, c, "shared", `{"customAction": "GetDatabase"}`)
	if db, _ := r.Lookup("database").StringValueOK(); db != "shared" || int32Of(t, r, "provisionedThroughput") != 1000 {
		t.Errorf("GetDatabase: %v", r)
	}
	cosmosOK(t, c, "shared", `{"customAction": "UpdateDatabase", "offerThroughput": 1200}`)
	if n := int32Of(t, cosmosOK(t, c, "shared", `{"customAction": "GetDatabase"}`), "provisionedThroughput"); n != 1200 {
		t.Errorf("provisionedThroughput %d after UpdateDatabase", n)
	}
	cosmosOK(t, c, "shared", `{"customAction": "UpdateDatabase", "autoScaleSettings": {"maxThroughput": 20000}}`)
	r = cosmosOK(t, c, "shared", `{"customAction": "GetDatabase"}`)
	if int32Of(t, r, "autoScaleSettings", "maxThroughput") != 20000 || int32Of(t, r, "provisionedThroughput") != 2000 {
		t.Errorf("GetDatabase after autoscale: %v", r)
	}
	// A collection sharing the database's offer shows none of its own.
	cosmosOK(t, c, "shared", `{"customAction": "CreateCollection", "collection": "a", "shardKey": "k"}`)
	r = cosmosOK(t, c, "shared", `{"customAction": "GetCollection", "collection": "a"}`)
	if _, err := r.LookupErr("provisionedThroughput"); err == nil {
		t.Errorf("a collection sharing its database's throughput answers its own: %v", r)
	}
	cosmosFails(t, c, "shared", `{"customAction": "CreateDatabase"}`, mongoerr.NamespaceExists, "already exists")

	cosmosOK(t, c, "plain", `{"customAction": "CreateDatabase"}`)
	r = cosmosOK(t, c, "plain", `{"customAction": "GetDatabase"}`)
	if _, err := r.LookupErr("provisionedThroughput"); err == nil {
		t.Errorf("a database without throughput answers one: %v", r)
	}
	cosmosFails(t, c, "plain", `{"customAction": "UpdateDatabase", "offerThroughput": 1000}`, mongoerr.BadValue, "no shared throughput")
	cosmosFails(t, c, "plain", `{"customAction": "UpdateDatabase"}`, mongoerr.BadValue, "needs offerThroughput")
	cosmosFails(t, c, "missing", `{"customAction": "GetDatabase"}`, mongoerr.NamespaceNotFound, "not found")
	cosmosFails(t, c, "missing", `{"customAction": "UpdateDatabase", "offerThroughput": 1000}`, mongoerr.NamespaceNotFound, "not found")
	cosmosFails(t, c, "missing", `{"customAction": "CreateDatabase", "offerThroughput": 100}`, mongoerr.BadValue, "between 400")
}

func TestCosmosCreateShardKey(t *testing.T) {
	c := cosmosConn(t)
	cosmosOK(t, c, "db", `{"create": "hashed", "shardKey": {"deviceId": "hashed"}, "offerThroughput": 30000}`)
	cosmosOK(t, c, "db", `{"create": "path", "shardKey": "tenant.id"}`)
	cosmosOK(t, c, "db", `{"create": "fixed", "offerThroughput": 5000}`)
	for coll, want := range map[string]string{"hashed": "3 deviceId", "path": "2 tenant.id"} {
		r := cosmosOK(t, c, "db", `{"customAction": "GetCollection", "collection": "`+coll+`"}`)
		key, _ := bsoncore.Document(r.Lookup("shardKeyDefinition").Document()).Elements()
		if got := fmt.Sprintf("%d %s", int32Of(t, r, "numPartitions"), key[0].Key()); got != want {
			t.Errorf("%s: %s, want %s (%v)", coll, got, want, r)
		}
	}
	r := cosmosOK(t, c, "db", `{"customAction": "GetCollection", "collection": "fixed"}`)
	if _, err := r.LookupErr("shardKeyDefinition"); err == nil || int32Of(t, r, "provisionedThroughput") != 5000 {
		t.Errorf("fixed: %v", r)
	}
	// Creating the same collection again succeeds; another key is a conflict.
	cosmosOK(t, c, "db", `{"create": "hashed", "shardKey": {"deviceId": "hashed"}}`)
	cosmosFails(t, c, "db", `{"create": "hashed", "shardKey": {"other": "hashed"}}`, mongoerr.NamespaceExists, "already exists")
	cosmosFails(t, c, "db", `{"create": "fixed", "shardKey": "k"}`, mongoerr.NamespaceExists, "already exists")
	cosmosFails(t, c, "db", `{"create": "big", "offerThroughput": 50000}`, mongoerr.BadValue, "should have a partition key")
	cosmosOK(t, c, "db", `{"create": "ranged", "shardKey": {"a": 1}}`) // MongoDB's ranged key
	cosmosFails(t, c, "db", `{"create": "bad", "shardKey": {"a": -1}}`, mongoerr.BadValue, "Unsupported shard key pattern")
	cosmosFails(t, c, "db", `{"create": "ts", "shardKey": "k", "timeseries": {"timeField": "t"}}`, mongoerr.NotImplemented, "time series")
	r = cosmosOK(t, c, "config", `{"find": "collections", "filter": {"_id": "db.hashed"}}`)
	if !strings.Contains(fmt.Sprint(r), "deviceId") {
		t.Errorf("config.collections does not show db.hashed sharded: %v", r)
	}
}

// TestCosmosPartitionStatsThroughput: partitionStats shows the throughput the partitions
// share and each one's budget; an idle autoscale collection runs at 10% of its maximum; a
// collection without its own throughput gets its share of its database's.
func TestCosmosPartitionStatsThroughput(t *testing.T) {
	c := cosmosConn(t)
	cosmosOK(t, c, "ps", `{"customAction": "CreateCollection", "collection": "auto", "shardKey": "k", "autoScaleSettings": {"maxThroughput": 20000}}`)
	r := cosmosOK(t, c, "ps", `{"partitionStats": "auto"}`)
	if r.Lookup("throughput").Int64() != 20000 || !r.Lookup("autoscale").Boolean() ||
		r.Lookup("autoscaleRUPerSec").Double() != 2000 || r.Lookup("partitions", "0", "budgetRUPerSec").Double() != 10000 {
		t.Errorf("autoscale partitionStats: %v", r)
	}
	cosmosOK(t, c, "shared", `{"customAction": "CreateDatabase", "offerThroughput": 4000}`)
	cosmosOK(t, c, "shared", `{"customAction": "CreateCollection", "collection": "a", "shardKey": "k"}`)
	cosmosOK(t, c, "shared", `{"customAction": "CreateCollection", "collection": "b", "shardKey": "k"}`)
	r = cosmosOK(t, c, "shared", `{"partitionStats": "a"}`)
	if r.Lookup("throughput").Int64() != 2000 || r.Lookup("autoscale").Boolean() {
		t.Errorf("a collection sharing 4,000 RU/s with one other: %v", r)
	}
	if _, err := r.LookupErr("autoscaleRUPerSec"); err == nil {
		t.Errorf("manual throughput reports an autoscale level: %v", r)
	}
}
