// Views and document validation as a user meets them in mongosh.
const assert = require("assert");

db.dropDatabase();
db.orders.insertMany([
  { _id: 1, item: "a", qty: 5, status: "A" },
  { _id: 2, item: "b", qty: 15, status: "A" },
  { _id: 3, item: "c", qty: 25, status: "D" },
]);
db.createView("active", "orders", [{ $match: { status: "A" } }, { $project: { item: 1, qty: 1 } }]);
db.createCollection("big", { viewOn: "active", pipeline: [{ $match: { qty: { $gte: 10 } } }] });

const info = db.getCollectionInfos({ name: "active" })[0];
assert.strictEqual(info.type, "view");
assert.strictEqual(info.options.viewOn, "orders");
assert.strictEqual(info.info.readOnly, true);
assert.strictEqual(JSON.stringify(db.active.find({}, { _id: 1 }).sort({ qty: -1 }).limit(1).toArray()), '[{"_id":2}]');
assert.strictEqual(db.active.countDocuments({ qty: { $gt: 1 } }), 2);
assert.strictEqual(db.big.findOne().item, "b");
assert.strictEqual(JSON.stringify(db.active.distinct("item")), '["a","b"]');
assert.strictEqual(db.active.aggregate([{ $group: { _id: null, n: { $sum: "$qty" } } }]).toArray()[0].n, 20);
let code = 0;
try { db.active.insertOne({ item: "x" }); } catch (e) { code = e.code; }
assert.strictEqual(code, 166);
code = 0;
try { db.runCommand({ collMod: "active", viewOn: "big" }); } catch (e) { code = e.code; }
assert.strictEqual(code, 5); // GraphContainsCycle
db.big.drop();
assert.ok(!db.getCollectionNames().includes("big"));

// Validation: $jsonSchema, errInfo, moderate, warn, bypass.
db.createCollection("students", {
  validator: {
    $jsonSchema: {
      bsonType: "object",
      required: ["name", "year"],
      properties: { name: { bsonType: "string" }, year: { bsonType: "int", minimum: 2017, maximum: 3017 } },
    },
  },
});
db.students.insertOne({ name: "Alice", year: NumberInt(2019) });
let err = null;
try { db.students.insertOne({ name: "Bob", year: 2019.5 }); } catch (e) { err = e; }
assert.strictEqual(err.code, 121);
assert.strictEqual(err.errInfo.details.operatorName, "$jsonSchema");
assert.ok(err.errInfo.failingDocumentId);
db.students.insertOne({ name: "Bob" }, { bypassDocumentValidation: true });
assert.strictEqual(db.students.countDocuments({ $jsonSchema: { required: ["year"] } }), 1);
db.runCommand({ collMod: "students", validationLevel: "moderate" });
db.students.updateOne({ name: "Bob" }, { $set: { note: "still invalid" } });
db.runCommand({ collMod: "students", validationLevel: "strict", validationAction: "warn" });
db.students.insertOne({ name: 42 });
assert.strictEqual(db.students.countDocuments(), 3);
print("views ok");
