// update, delete and findAndModify as a user types them in mongosh.
const assert = require("assert");
const eq = (got, want, msg) => assert.strictEqual(JSON.stringify(got), JSON.stringify(want), msg);

db.w.drop();
db.w.insertMany([{ _id: 1, qty: 5, tags: ["a"] }, { _id: 2, qty: 10 }, { _id: 3, qty: 15 }]);

let r = db.w.updateOne({ _id: 1 }, { $inc: { qty: 1 }, $push: { tags: "b" } });
assert.strictEqual(r.matchedCount, 1);
assert.strictEqual(r.modifiedCount, 1);
eq(db.w.findOne({ _id: 1 }), { _id: 1, qty: 6, tags: ["a", "b"] });

r = db.w.updateMany({ qty: { $gte: 10 } }, { $set: { big: true } });
assert.strictEqual(r.matchedCount, 2);
assert.strictEqual(r.modifiedCount, 2);
r = db.w.updateMany({ qty: { $gte: 10 } }, { $set: { big: true } });
assert.strictEqual(r.modifiedCount, 0, "a no-op update modifies nothing");

r = db.w.updateOne({ sku: "x1" }, { $set: { qty: 1 }, $setOnInsert: { created: true } }, { upsert: true });
assert.strictEqual(r.upsertedCount, 1);
const up = db.w.findOne({ _id: r.insertedId });
assert.strictEqual(up.sku, "x1");
assert.strictEqual(up.created, true);

r = db.w.replaceOne({ _id: 2 }, { qty: 99 });
assert.strictEqual(r.modifiedCount, 1);
eq(db.w.findOne({ _id: 2 }), { _id: 2, qty: 99 });

r = db.w.updateMany({}, [{ $set: { double: { $multiply: ["$qty", 2] } } }]);
assert.strictEqual(db.w.findOne({ _id: 3 }).double, 30);

let doc = db.w.findOneAndUpdate({ _id: 3 }, { $inc: { qty: 1 } }, { returnDocument: "after", projection: { qty: 1 } });
eq(doc, { _id: 3, qty: 16 });
doc = db.w.findOneAndDelete({ qty: { $exists: true } }, { sort: { qty: -1 } });
assert.strictEqual(doc._id, 2);

// NB: mongosh awaits shell calls only in top-level statements, so errors are caught with
// try/catch rather than assert.throws(() => ...).
let code = 0;
try { db.w.updateOne({ _id: 1 }, { $set: { _id: 5 } }); } catch (e) { code = e.code; }
assert.strictEqual(code, 66);
let raw = db.runCommand({ update: "w", updates: [{ q: {}, u: { qty: 1 }, multi: true }] });
assert.strictEqual(raw.writeErrors[0].code, 9);
assert.strictEqual(raw.writeErrors[0].errmsg, "multi update is not supported for replacement-style update");

const bulk = db.w.bulkWrite([
  { updateOne: { filter: { _id: 1 }, update: { $set: { b: 1 } } } },
  { deleteOne: { filter: { _id: 3 } } },
  { updateOne: { filter: { _id: 7 }, update: { $set: { b: 1 } }, upsert: true } },
]);
assert.strictEqual(bulk.modifiedCount, 1);
assert.strictEqual(bulk.deletedCount, 1);
assert.strictEqual(bulk.upsertedCount, 1);

r = db.w.deleteMany({});
assert.strictEqual(r.deletedCount, 3);
assert.strictEqual(db.w.countDocuments({}), 0);

print("crud_write ok");
