// The Node.js driver's change stream: an application listens for changes while another
// client writes; every write arrives once, in order, and a stream resumed from a token
// continues where it stopped.
"use strict";
const assert = require("node:assert/strict");
const { MongoClient } = require("mongodb");

async function main() {
  const uri = process.env.MONGODB_URI;
  const dbName = process.env.DB_NAME;
  const listener = new MongoClient(uri);
  const writer = new MongoClient(uri);
  await Promise.all([listener.connect(), writer.connect()]);
  try {
    await writer.db(dbName).dropDatabase();
    const stream = listener.db(dbName).collection("orders").watch([], { fullDocument: "updateLookup" });
    const got = [];
    const done = new Promise((resolve, reject) => {
      stream.on("change", (e) => {
        got.push(e);
        if (got.length === 30) resolve();
      });
      stream.on("error", reject);
    });
    await new Promise((r) => setTimeout(r, 200)); // the stream's aggregate has started
    const orders = writer.db(dbName).collection("orders");
    for (let i = 0; i < 20; i++) await orders.insertOne({ _id: i, state: "new" });
    for (let i = 0; i < 10; i++) await orders.updateOne({ _id: i }, { $set: { state: "paid" } });
    await done;
    assert.deepEqual(got.slice(0, 20).map((e) => e.documentKey._id), [...Array(20).keys()]);
    for (const e of got.slice(20)) {
      assert.equal(e.operationType, "update");
      assert.equal(e.fullDocument.state, "paid");
    }
    const token = got[9]._id;
    await stream.close();
    const resumed = listener.db(dbName).collection("orders").watch([], { resumeAfter: token });
    const next = await resumed.next();
    assert.equal(next.documentKey._id, 10);
    await resumed.close();
  } finally {
    await Promise.all([listener.close(), writer.close()]);
  }
  console.log("node changestream ok");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
