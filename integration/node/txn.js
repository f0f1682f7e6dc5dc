// The Node.js driver's withTransaction: 8 clients transfer amounts between two accounts of
// one logical partition 1,000 times in all; the sum is conserved and conflicts are retried.
"use strict";
const assert = require("node:assert/strict");
const { MongoClient } = require("mongodb");

async function main() {
  const uri = process.env.MONGODB_URI;
  const admin = new MongoClient(uri);
  await admin.connect();
  const dbName = process.env.DB_NAME;
  const db = admin.db(dbName);
  await db.dropDatabase();
  await admin.db("admin").command({ shardCollection: `${dbName}.accounts`, key: { bank: "hashed" } });
  const accounts = db.collection("accounts");
  await accounts.insertMany([
    { _id: "a", bank: "b1", balance: 1000 },
    { _id: "b", bank: "b1", balance: 1000 },
  ]);
  let attempts = 0;
  const clients = [];
  for (let c = 0; c < 8; c++) {
    clients.push(new MongoClient(uri));
  }
  try {
    await Promise.all(clients.map(async (client, c) => {
      await client.connect();
      const coll = client.db(dbName).collection("accounts");
      for (let i = 0; i < 125; i++) {
        const [from, to] = (i + c) % 2 === 0 ? ["a", "b"] : ["b", "a"];
        const session = client.startSession();
        try {
          await session.withTransaction(async () => {
            attempts++;
            await coll.updateOne({ _id: from, bank: "b1" }, { $inc: { balance: -1 } }, { session });
            await coll.updateOne({ _id: to, bank: "b1" }, { $inc: { balance: 1 } }, { session });
          });
        } finally {
          await session.endSession();
        }
      }
    }));
    const docs = await accounts.find({ bank: "b1" }).toArray();
    assert.equal(docs.length, 2);
    assert.equal(docs[0].balance + docs[1].balance, 2000);
    console.log(`node txn ok: 1000 transfers in ${attempts} attempts`);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await admin.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
