// Change streams as a user meets them in mongosh: watch() on a collection and a database,
// the events of each kind, updateLookup, resuming from a token, and invalidate.
const assert = require("assert");

db.dropDatabase();
const cs = db.c.watch([], { fullDocument: "updateLookup" });
assert.strictEqual(cs.tryNext(), null);
db.c.insertOne({ _id: 1, a: 1, arr: [1, 2, 3] });
db.c.updateOne({ _id: 1 }, { $set: { a: 2 }, $pop: { arr: 1 } });
db.c.replaceOne({ _id: 1 }, { b: 1 });
db.c.deleteOne({ _id: 1 });
const ev = [];
while (ev.length < 4) {
  const e = cs.tryNext();
  if (e) ev.push(e);
}
assert.deepStrictEqual(ev.map((e) => e.operationType), ["insert", "update", "replace", "delete"]);
const json = (v) => JSON.stringify(v);
assert.strictEqual(json(ev[0].fullDocument), json({ _id: 1, a: 1, arr: [1, 2, 3] }));
assert.strictEqual(json(ev[1].updateDescription.updatedFields), json({ a: 2 }));
assert.strictEqual(json(ev[1].updateDescription.truncatedArrays), json([{ field: "arr", newSize: 2 }]));
assert.strictEqual(ev[1].fullDocument, null); // looked up now: deleted since
assert.strictEqual(json(ev[3].documentKey), json({ _id: 1 }));
assert.strictEqual(json(ev[0].ns), json({ db: db.getName(), coll: "c" }));
for (let i = 1; i < ev.length; i++) {
  assert.ok(ev[i]._id._data > ev[i - 1]._id._data, "resume tokens grow");
}

// Resuming after the insert returns the three events after it.
const rs = db.c.watch([], { resumeAfter: ev[0]._id });
const again = [];
while (again.length < 3) {
  const e = rs.tryNext();
  if (e) again.push(e.operationType);
}
assert.deepStrictEqual(again, ["update", "replace", "delete"]);

// A database's stream sees its collections, with a $match, until the database is dropped.
const dbs = db.watch([{ $match: { operationType: { $in: ["insert", "dropDatabase", "invalidate"] } } }]);
db.d.insertOne({ _id: "x" });
db.dropDatabase();
const seen = [];
while (seen.length < 3) {
  const e = dbs.tryNext();
  if (e) seen.push(e.operationType);
}
assert.deepStrictEqual(seen, ["insert", "dropDatabase", "invalidate"]);
assert.ok(dbs.isClosed());

let code = 0;
try {
  db.c.watch([{ $group: { _id: 1 } }]);
} catch (e) {
  code = e.code;
}
assert.strictEqual(code, 20);
print("changestream ok");
