// The device-telemetry scenario of the seeds, as a user types it in mongosh: a collection
// sharded on deviceId into 16 partitions; create, read by shard key and by _id, update and
// delete; the cross-partition query with a sort, which must return exactly what the same
// query returns on an unsharded copy, with and without an index; $group by deviceId; and
// getLastRequestStatistics after each kind of operation. Runs on any number of shards.
const assert = require("assert");

const name = db.getName();
sh.enableSharding(name);
const res = sh.shardCollection(name + ".telemetry", { deviceId: "hashed" }, false, { numInitialChunks: 16 });
assert.strictEqual(res.ok, 1);

function lastStats(command) {
  const s = db.runCommand({ getLastRequestStatistics: 1 });
  assert.strictEqual(s.ok, 1);
  assert.strictEqual(s._t, "GetRequestStatisticsResponse");
  assert.strictEqual(s.CommandName, command, JSON.stringify(s));
  assert.ok(s.RequestCharge > 0, JSON.stringify(s));
  assert.ok(s.RequestDurationInMilliSeconds >= 0, JSON.stringify(s));
  return s;
}

// Create.
const types = ["Temperature", "Humidity", "Pressure"];
const docs = [];
for (let i = 0; i < 3000; i++) {
  docs.push({
    _id: i,
    deviceId: "dev-" + (i % 97),
    metricType: types[i % 3],
    metricValue: (i * 37) % 211, // many equal values: ties broken by _id below
    readingTime: new Date(Date.UTC(2026, 0, 1) + i * 1000),
  });
}
db.telemetry.insertMany(docs);
lastStats("insert");
db.plain.insertMany(docs);
assert.strictEqual(db.telemetry.countDocuments({}), 3000);

// Read by shard key (one partition) and by _id.
const byKey = db.telemetry.find({ deviceId: "dev-5" }).toArray();
assert.strictEqual(byKey.length, 31);
const plan = db.telemetry.find({ deviceId: "dev-5" }).explain().queryPlanner.winningPlan;
assert.strictEqual(plan.stage, "SINGLE_SHARD", JSON.stringify(plan));
assert.strictEqual(plan.shards[0].partitions.length, 1);
assert.strictEqual(db.telemetry.findOne({ _id: 1234 }).deviceId, "dev-70");
lastStats("find");

// Update and delete, by shard key and by _id.
assert.strictEqual(db.telemetry.updateOne({ deviceId: "dev-5", _id: 5 }, { $set: { flagged: true } }).modifiedCount, 1);
lastStats("update");
assert.strictEqual(db.telemetry.updateOne({ _id: 6 }, { $inc: { metricValue: 1000 } }).modifiedCount, 1);
assert.strictEqual(db.telemetry.updateMany({ deviceId: "dev-7" }, { $set: { seen: 1 } }).modifiedCount, 31);
assert.strictEqual(db.telemetry.deleteOne({ deviceId: "dev-8", _id: 8 }).deletedCount, 1);
lastStats("delete");
assert.strictEqual(db.telemetry.deleteOne({ _id: 9 }).deletedCount, 1);
// The same changes on the unsharded copy.
db.plain.updateOne({ _id: 5 }, { $set: { flagged: true } });
db.plain.updateOne({ _id: 6 }, { $inc: { metricValue: 1000 } });
db.plain.updateMany({ deviceId: "dev-7" }, { $set: { seen: 1 } });
db.plain.deleteMany({ _id: { $in: [8, 9] } });

// The cross-partition query with a sort equals the unsharded one, in order, with and
// without an index on metricValue.
const query = { metricType: "Temperature", metricValue: { $gt: 100 } };
function compare(label) {
  for (const sort of [{ metricValue: 1, _id: 1 }, { metricValue: -1, _id: -1 }]) {
    const a = JSON.stringify(db.telemetry.find(query).sort(sort).toArray());
    const b = JSON.stringify(db.plain.find(query).sort(sort).toArray());
    assert.strictEqual(a, b, label + " " + JSON.stringify(sort));
    const top = JSON.stringify(db.telemetry.find(query).sort(sort).limit(7).toArray());
    assert.strictEqual(top, JSON.stringify(db.plain.find(query).sort(sort).limit(7).toArray()), label + " limit");
  }
}
compare("no index");
db.telemetry.createIndex({ metricValue: 1 });
db.plain.createIndex({ metricValue: 1 });
compare("index");
const sorted = db.telemetry.find(query).sort({ metricValue: 1 }).explain().queryPlanner.winningPlan;
assert.ok(["SHARD_MERGE_SORT", "SINGLE_SHARD"].includes(sorted.stage), JSON.stringify(sorted));

// $group by deviceId with $avg/$max/$sum/$count equals the unsharded one.
const group = [
  { $match: { metricType: "Temperature" } },
  { $group: { _id: "$deviceId", avg: { $avg: "$metricValue" }, max: { $max: "$metricValue" }, sum: { $sum: "$metricValue" }, n: { $count: {} } } },
  { $sort: { _id: 1 } },
];
assert.strictEqual(JSON.stringify(db.telemetry.aggregate(group).toArray()), JSON.stringify(db.plain.aggregate(group).toArray()));
lastStats("aggregate");

print("telemetry ok");
