// Capped collections and tailable cursors as a user meets them in mongosh.
const assert = require("assert");

db.dropDatabase();
db.createCollection("c", { capped: true, size: 4096, max: 3 });
assert.strictEqual(db.c.isCapped(), true);
assert.strictEqual(JSON.stringify(db.getCollectionInfos({ name: "c" })[0].options), '{"capped":true,"size":4096,"max":3}');
db.plain.insertOne({});
assert.strictEqual(db.plain.isCapped(), false);

// Natural order is insertion order; past max the oldest documents go.
for (const id of [5, 1, 4, 2]) db.c.insertOne({ _id: id });
const ids = (docs) => JSON.stringify(docs.map((d) => d._id));
assert.strictEqual(ids(db.c.find().toArray()), "[1,4,2]");
assert.strictEqual(ids(db.c.find().sort({ $natural: -1 }).toArray()), "[2,4,1]");
const st = db.c.stats();
assert.strictEqual(st.capped, true);
assert.strictEqual(st.max, 3);
assert.strictEqual(st.maxSize, 4096);
assert.strictEqual(st.count, 3);

// A tailable cursor stays open at the end and returns what is inserted later.
const cur = db.c.find().tailable({ awaitData: true });
assert.strictEqual(ids([cur.tryNext(), cur.tryNext(), cur.tryNext()]), "[1,4,2]");
assert.strictEqual(cur.tryNext(), null);
db.c.insertOne({ _id: 6 });
assert.strictEqual(cur.tryNext()._id, 6);
cur.close();

let code = 0;
try { db.plain.find().tailable().toArray(); } catch (e) { code = e.code; }
assert.strictEqual(code, 2);
print("capped ok");
