// The Node.js driver's server monitoring against cleave: with a short heartbeatFrequencyMS
// the driver streams awaitable hellos (exhaustAllowed) for a few seconds while the
// application works. The stream must last: no failed heartbeat, no cleared pool, no failed
// operation (a lone reply to an exhaust hello made the driver clear its pool at every
// heartbeat). Run by TestNodeDriverMonitoring; prints "node monitor ok".
"use strict";
const assert = require("node:assert/strict");
const { MongoClient } = require("mongodb");

async function main() {
  const client = new MongoClient(process.env.MONGODB_URI, {
    serverSelectionTimeoutMS: 10000,
    heartbeatFrequencyMS: 500,
    serverMonitoringMode: "stream",
  });
  const seen = { awaited: 0, failed: [], cleared: 0 };
  client.on("serverHeartbeatSucceeded", (e) => { if (e.awaited) seen.awaited++; });
  client.on("serverHeartbeatFailed", (e) => seen.failed.push(String(e.failure)));
  client.on("connectionPoolCleared", () => seen.cleared++);
  await client.connect();
  try {
    const coll = client.db(process.env.DB_NAME || "node_monitor").collection("beats");
    await coll.deleteMany({}); // a rerun (go test -count) meets the same shared server
    const until = Date.now() + 3500;
    for (let i = 0; Date.now() < until; i++) {
      await coll.insertOne({ _id: i });
      assert.equal(await coll.countDocuments({ _id: i }), 1);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await client.close();
  }
  assert.deepEqual(seen.failed, [], "failed heartbeats");
  assert.equal(seen.cleared, 0, "pool clears");
  assert.ok(seen.awaited >= 4, `${seen.awaited} awaited heartbeats, want at least 4 in 3.5 s`);
  console.log(`node monitor ok: ${seen.awaited} awaited heartbeats`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
