// The aggregate command as a mongosh user runs it (issue 5).
const assert = require("assert");

// same compares documents as JSON, field order included.
function same(got, want) {
  assert.strictEqual(JSON.stringify(got), JSON.stringify(want));
}

db.c.drop();
db.c.insertMany([
  { _id: 1, item: "abc", price: 10, quantity: 2, tags: ["a", "b"] },
  { _id: 2, item: "jkl", price: 20, quantity: 1, tags: [] },
  { _id: 3, item: "xyz", price: 5, quantity: 10, tags: ["a"] },
  { _id: 4, item: "xyz", price: 5, quantity: 20 },
  { _id: 5, item: "abc", price: 10, quantity: 10, tags: ["c"] },
]);

assert.strictEqual(db.c.countDocuments({}), 5);
assert.strictEqual(db.c.countDocuments({ price: { $gte: 10 } }), 3);
assert.strictEqual(db.c.countDocuments({}, { skip: 4 }), 1);

const groups = db.c.aggregate([
  { $group: { _id: "$item", total: { $sum: { $multiply: ["$price", "$quantity"] } }, avg: { $avg: "$quantity" } } },
  { $sort: { total: -1 } },
]).toArray();
same(groups, [
  { _id: "xyz", total: 150, avg: 15 },
  { _id: "abc", total: 120, avg: 6 },
  { _id: "jkl", total: 20, avg: 1 },
]);

const tags = db.c.aggregate([{ $unwind: "$tags" }, { $sortByCount: "$tags" }, { $limit: 1 }]).toArray();
same(tags, [{ _id: "a", count: 2 }]);

const proj = db.c.aggregate([{ $match: { _id: 1 } }, { $project: { _id: 0, item: 1, cost: { $multiply: ["$price", "$quantity"] } } }]).toArray();
same(proj, [{ item: "abc", cost: 20 }]);

// A cursor that needs getMore.
assert.strictEqual(db.c.aggregate([{ $sort: { quantity: 1 } }], { cursor: { batchSize: 2 } }).toArray().length, 5);

// explain through the shell helper.
const plan = db.c.explain().aggregate([{ $match: { price: 10 } }, { $group: { _id: "$item" } }]);
assert.ok(plan.queryPlanner, JSON.stringify(plan));

// Errors carry MongoDB's codes.
function serverError(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected a server error");
}
const unknown = serverError(() => db.c.aggregate([{ $foo: 1 }]).toArray());
assert.strictEqual(unknown.code, 40324);
assert.strictEqual(unknown.errmsg, "Unrecognized pipeline stage name: '$foo'");

print("aggregate ok");
