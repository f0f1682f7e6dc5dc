// An application-style test with the Node.js driver (mongodb from npm, pinned in
// package-lock.json): connect, CRUD, bulkWrite, aggregation, cursors, error codes.
// Run by TestNodeDriver with MONGODB_URI set; prints "node app ok" when every check passed.
"use strict";
const assert = require("node:assert/strict");
const { MongoClient, MongoServerError, ObjectId } = require("mongodb");

async function main() {
  const client = new MongoClient(process.env.MONGODB_URI, { serverSelectionTimeoutMS: 10000 });
  await client.connect();
  try {
    const db = client.db(process.env.DB_NAME || "node_app");
    await db.command({ ping: 1 });
    const users = db.collection("users");

    // Create.
    const one = await users.insertOne({ name: "ada", age: 36, tags: ["math", "code"] });
    assert.ok(one.insertedId instanceof ObjectId);
    const many = await users.insertMany([
      { _id: 1, name: "grace", age: 45 },
      { _id: 2, name: "alan", age: 41 },
      { _id: 3, name: "edsger", age: 72 },
    ]);
    assert.equal(many.insertedCount, 3);

    // Read: filters, projection, sort, limit, skip.
    const byAge = await users.find({ age: { $gt: 40 } }, { projection: { _id: 0, name: 1 } }).sort({ age: -1 }).toArray();
    assert.deepEqual(byAge, [{ name: "edsger" }, { name: "grace" }, { name: "alan" }]);
    const ada = await users.findOne({ tags: "code" });
    assert.equal(ada.name, "ada");
    assert.equal(await users.countDocuments({ age: { $lt: 50 } }), 3);
    assert.equal(await users.estimatedDocumentCount(), 4);
    assert.deepEqual(await users.distinct("name", { age: { $gte: 45 } }), ["edsger", "grace"]);

    // Update and delete.
    const upd = await users.updateOne({ _id: 2 }, { $inc: { age: 1 }, $push: { tags: "turing" } });
    assert.equal(upd.matchedCount, 1);
    assert.equal(upd.modifiedCount, 1);
    assert.equal((await users.findOne({ _id: 2 })).age, 42);
    const ups = await users.updateOne({ _id: 9 }, { $set: { name: "barbara" } }, { upsert: true });
    assert.equal(ups.upsertedId, 9);
    const fam = await users.findOneAndUpdate({ _id: 9 }, { $set: { age: 80 } }, { returnDocument: "after" });
    assert.equal(fam.age, 80);
    const del = await users.deleteMany({ age: { $gte: 70 } });
    assert.equal(del.deletedCount, 2);

    // bulkWrite, ordered, with a duplicate key in the middle.
    try {
      await users.bulkWrite([
        { insertOne: { document: { _id: 10, name: "x" } } },
        { insertOne: { document: { _id: 10, name: "dup" } } },
        { insertOne: { document: { _id: 11, name: "never" } } },
      ]);
      assert.fail("bulkWrite should fail");
    } catch (e) {
      assert.equal(e.code, 11000);
      assert.equal(e.result.insertedCount, 1);
    }
    assert.equal(await users.countDocuments({ _id: 11 }), 0);
    const bulk = await users.bulkWrite([
      { updateMany: { filter: { age: { $exists: true } }, update: { $set: { seen: true } } } },
      { deleteOne: { filter: { _id: 10 } } },
      { replaceOne: { filter: { _id: 1 }, replacement: { name: "grace hopper", age: 45 } } },
    ], { ordered: false });
    assert.equal(bulk.deletedCount, 1);
    assert.equal((await users.findOne({ _id: 1 })).name, "grace hopper");

    // Aggregation.
    const groups = await users.aggregate([
      { $match: { age: { $exists: true } } },
      { $group: { _id: null, n: { $sum: 1 }, avg: { $avg: "$age" } } },
    ]).toArray();
    assert.equal(groups.length, 1);
    assert.equal(groups[0].n, 3);

    // Cursors over many documents in small batches.
    const events = db.collection("events");
    await events.drop().catch(() => {});
    const docs = [];
    for (let i = 0; i < 5000; i++) docs.push({ i, even: i % 2 === 0 });
    await events.insertMany(docs);
    let seen = 0;
    let last = -1;
    for await (const d of events.find({ even: true }).sort({ i: 1 }).batchSize(37)) {
      assert.ok(d.i > last);
      last = d.i;
      seen++;
    }
    assert.equal(seen, 2500);

    // Indexes and error codes.
    await users.createIndex({ name: 1 }, { unique: true });
    await assert.rejects(users.insertOne({ name: "ada" }), (e) => e instanceof MongoServerError && e.code === 11000 && e.keyValue.name === "ada");
    await assert.rejects(db.command({ nosuchcommand: 1 }), (e) => e.code === 59 && e.codeName === "CommandNotFound");
    await assert.rejects(users.find({ a: { $foo: 1 } }).toArray(), (e) => e.code === 2);
    console.log("node app ok");
  } finally {
    await client.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
