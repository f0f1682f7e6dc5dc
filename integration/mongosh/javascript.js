// Server-side JavaScript as a user meets it in mongosh: $where, $function, $accumulator and
// db.collection.mapReduce (MongoDB's documentation's examples).
const assert = require("assert");

db.dropDatabase();
db.orders.insertMany([
  { _id: 1, cust_id: "Ant O. Knee", price: 25, items: [{ sku: "oranges", qty: 5, price: 2.5 }, { sku: "apples", qty: 5, price: 2.5 }], status: "A" },
  { _id: 2, cust_id: "Ant O. Knee", price: 70, items: [{ sku: "oranges", qty: 8, price: 2.5 }, { sku: "chocolates", qty: 5, price: 10 }], status: "A" },
  { _id: 3, cust_id: "Busby Bee", price: 50, items: [{ sku: "oranges", qty: 10, price: 2.5 }, { sku: "pears", qty: 10, price: 2.5 }], status: "A" },
  { _id: 4, cust_id: "Busby Bee", price: 25, items: [{ sku: "oranges", qty: 10, price: 2.5 }], status: "D" },
  { _id: 5, cust_id: "Don Quis", price: 55, items: [{ sku: "apples", qty: 10, price: 2.5 }, { sku: "chocolates", qty: 5, price: 10 }], status: "A" },
]);

assert.strictEqual(db.orders.find({ $where: function () { return this.price > 50; } }).count(), 2);

const fn = db.orders.aggregate([
  { $addFields: { loud: { $function: { body: function (name) { return name.toUpperCase(); }, args: ["$cust_id"], lang: "js" } } } },
  { $sort: { _id: 1 } }, { $limit: 1 },
]).toArray();
assert.strictEqual(fn[0].loud, "ANT O. KNEE");

const acc = db.orders.aggregate([
  { $group: { _id: "$cust_id", total: { $accumulator: {
    init: function () { return { sum: 0 }; },
    accumulate: function (state, price) { return { sum: state.sum + price }; },
    accumulateArgs: ["$price"],
    merge: function (a, b) { return { sum: a.sum + b.sum }; },
    finalize: function (state) { return state.sum; },
    lang: "js" } } } },
  { $sort: { _id: 1 } },
]).toArray();
assert.strictEqual(JSON.stringify(acc.map((d) => d.total)), "[95,75,55]");

const mapFn = function () { emit(this.cust_id, this.price); };
const reduceFn = function (key, values) { return Array.sum(values); };
const out = db.orders.mapReduce(mapFn, reduceFn, { out: "map_reduce_example" });
assert.strictEqual(out.result, "map_reduce_example");
assert.strictEqual(db.map_reduce_example.findOne({ _id: "Busby Bee" }).value, 75);

const inline = db.orders.mapReduce(mapFn, function (k, vs) { var s = 0; vs.forEach(function (v) { s += v; }); return s; },
  { out: { inline: 1 }, query: { status: "A" }, finalize: function (k, v) { return v * factor; }, scope: { factor: 2 } });
assert.strictEqual(JSON.stringify(inline.results), '[{"_id":"Ant O. Knee","value":190},{"_id":"Busby Bee","value":100},{"_id":"Don Quis","value":110}]');
print("javascript ok");
