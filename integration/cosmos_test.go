package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cosmosScript drives Cosmos DB's extension commands from mongosh, as its documentation
// shows them, on a collection the Go test created and filled: CreateCollection's 3
// partitions, UpdateCollection's split to 5 with every document still found, the database
// commands, the unsharded 10,000 RU/s limit and createCollection with a shardKey.
const cosmosScript = `
const assert = require("assert");
const get = () => db.runCommand({customAction: "GetCollection", collection: "coll"});
let r = get();
assert.strictEqual(r.provisionedThroughput, 25000);
assert.strictEqual(r.numPartitions, 3);
assert.strictEqual(r.database, db.getName());
assert.strictEqual(r.collection, "coll");
assert.strictEqual(r.shardKeyDefinition.deviceId, "hashed");

assert.strictEqual(db.runCommand({customAction: "UpdateCollection", collection: "coll", offerThroughput: 45000}).ok, 1);
r = get();
assert.strictEqual(r.numPartitions, 5);
assert.strictEqual(r.provisionedThroughput, 45000);
assert.strictEqual(db.coll.countDocuments({}), 1000);
assert.strictEqual(db.coll.countDocuments({deviceId: "dev-042"}), 10);
assert.strictEqual(db.coll.find({deviceId: {$in: ["dev-001", "dev-099"]}}).toArray().length, 20);

// A collection without a shard key stops at 10,000 RU/s, with Cosmos DB's code 2.
let err = null;
try {
  const res = db.runCommand({customAction: "CreateCollection", collection: "big", offerThroughput: 20000});
  if (res.ok !== 1) err = res;
} catch (e) { err = e; }
assert(err, "CreateCollection of 20000 RU/s without a shardKey succeeded");
assert.strictEqual(err.code, 2);
assert.match(err.errmsg || err.message, /partition key.*10000 RU\/s/);

// Shared database throughput, manual then autoscale.
const shared = db.getSiblingDB(db.getName() + "_shared");
assert.strictEqual(shared.runCommand({customAction: "CreateDatabase", offerThroughput: 1000}).ok, 1);
r = shared.runCommand({customAction: "GetDatabase"});
assert.strictEqual(r.database, shared.getName());
assert.strictEqual(r.provisionedThroughput, 1000);
assert.strictEqual(shared.runCommand({customAction: "UpdateDatabase", autoScaleSettings: {maxThroughput: 20000}}).ok, 1);
r = shared.runCommand({customAction: "GetDatabase"});
assert.strictEqual(r.autoScaleSettings.maxThroughput, 20000);

// createCollection with a shard key creates the collection sharded.
db.createCollection("viaShell", {shardKey: {tenant: "hashed"}, offerThroughput: 30000});
r = db.runCommand({customAction: "GetCollection", collection: "viaShell"});
assert.strictEqual(r.shardKeyDefinition.tenant, "hashed");
assert.strictEqual(r.numPartitions, 3);
print("cosmos ok");
`

// TestCosmosCustomActions runs Cosmos DB's extension commands through the Go driver and the
// real mongosh: T = 25,000 gives 3 partitions, raising it to 45,000 splits them to 5 while
// every document inserted before stays findable by count and by shard key.
func TestCosmosCustomActions(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	c := srv.client(t)
	name := dbName(t)
	db := c.Database(name)
	ctx := context.Background()
	err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "coll"},
		{Key: "shardKey", Value: "deviceId"}, {Key: "offerThroughput", Value: 25000}}).Err()
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]any, 1000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "deviceId", Value: fmt.Sprintf("dev-%03d", i%100)}, {Key: "v", Value: i}}
	}
	if _, err := db.Collection("coll").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	out := srv.mongosh(t, name, "--eval", cosmosScript)
	if !strings.Contains(out, "cosmos ok") {
		t.Fatalf("mongosh:\n%s", out)
	}
	// After the split, partitionStats agrees and every partition holds some of the data.
	st := partitionStats(t, db, "coll")
	if n := st["numPartitions"].(int32); n != 5 {
		t.Fatalf("partitionStats: %d partitions, want 5", n)
	}
	var total int64
	for _, p := range st["partitions"].(bson.A) {
		var n int64
		for _, e := range p.(bson.D) {
			if e.Key == "documents" {
				n = e.Value.(int64)
			}
		}
		if n == 0 {
			t.Errorf("an empty partition after the split: %v", p)
		}
		total += n
	}
	if total != 1000 {
		t.Errorf("partitions hold %d documents, want 1000", total)
	}
	for _, dev := range []string{"dev-000", "dev-057"} {
		n, err := db.Collection("coll").CountDocuments(ctx, bson.D{{Key: "deviceId", Value: dev}})
		if err != nil || n != 10 {
			t.Errorf("%s after the split: %d documents, %v", dev, n, err)
		}
	}
}
