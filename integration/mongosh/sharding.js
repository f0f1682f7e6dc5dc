// Sharding as a user types it in mongosh (issue 4): sh.enableSharding, sh.shardCollection,
// sh.status() with the real partitions, targeted reads with explain, partitionStats.
// It runs on any number of shards, in the database it is connected to.
const assert = require("assert");

const name = db.getName();
const ns = name + ".people";
assert.strictEqual(sh.enableSharding(name).ok, 1);
const res = sh.shardCollection(ns, { region: "hashed" });
assert.strictEqual(res.ok, 1);
assert.strictEqual(res.collectionsharded, ns);
assert.strictEqual(res._t, "ShardCollectionResponse");

const docs = [];
for (let i = 0; i < 1000; i++) {
  docs.push({ _id: i, region: "r" + (i % 50), n: i });
}
db.people.insertMany(docs);
assert.strictEqual(db.people.countDocuments({}), 1000);
assert.strictEqual(db.people.find({ region: "r7" }).itcount(), 20);
// 1, 1.0 and NumberLong(1) are one shard-key value.
db.people.insertMany([{ _id: "a", region: 1 }, { _id: "b", region: 1.0 }, { _id: "c", region: NumberLong("1") }]);
assert.strictEqual(db.people.find({ region: 1 }).itcount(), 3);

// A shard-key equality reads one partition.
const plan = db.people.find({ region: "r7" }).explain().queryPlanner.winningPlan;
assert.strictEqual(plan.stage, "SINGLE_SHARD", JSON.stringify(plan));
assert.strictEqual(plan.shards.length, 1);
assert.strictEqual(plan.shards[0].partitions.length, 1);

// sh.status() shows the collection and its partitions, from config.*.
const status = sh.status().value;
const dbEntry = status.databases.find((d) => d.database._id === name);
assert.ok(dbEntry, JSON.stringify(status.databases));
const coll = dbEntry.collections[ns];
assert.strictEqual(JSON.stringify(coll.shardKey), JSON.stringify({ region: "hashed" }));
assert.ok(coll.chunks.length >= 1, JSON.stringify(coll));
const nChunks = coll.chunkMetadata.reduce((s, c) => s + c.nChunks, 0);
assert.strictEqual(nChunks, coll.chunks.length);
assert.strictEqual(db.getSiblingDB("config").chunks.countDocuments({ ns: ns }), coll.chunks.length);
assert.ok(db.getSiblingDB("config").shards.find().toArray().length >= 1);
assert.strictEqual(db.getSiblingDB("config").collections.findOne({ _id: ns }).key.region, "hashed");

// partitionStats: per partition documents and bytes that add up.
const stats = db.runCommand({ partitionStats: "people" });
assert.strictEqual(stats.ok, 1);
assert.strictEqual(stats.partitions.length, coll.chunks.length);
assert.strictEqual(stats.partitions.reduce((s, p) => s + Number(p.documents), 0), 1003);

// Arrays are refused as shard-key values.
let code = 0;
try {
  db.people.insertOne({ _id: "arr", region: [1, 2] });
} catch (e) {
  code = e.code || (e.writeErrors && e.writeErrors[0].code);
}
assert.strictEqual(code, 61);

print("sharding ok");
