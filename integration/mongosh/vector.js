// Vector search as a mongosh user runs it (issue 42): createSearchIndex, getSearchIndexes,
// $vectorSearch with a filter and the score, updateSearchIndex, dropSearchIndex.
const assert = require("assert");

// same compares values as JSON.
function same(got, want) {
  assert.strictEqual(JSON.stringify(got), JSON.stringify(want));
}

db.items.drop();
db.items.insertMany([
  { _id: 1, v: [1, 0], cat: "a" },
  { _id: 2, v: [0.8, 0.6], cat: "b" },
  { _id: 3, v: [0, 1], cat: "a" },
  { _id: 4, v: [-1, 0], cat: "b" },
]);

db.items.createSearchIndex({
  name: "vec",
  type: "vectorSearch",
  definition: {
    fields: [
      { type: "vector", path: "v", numDimensions: 2, similarity: "dotProduct" },
      { type: "filter", path: "cat" },
    ],
  },
});
const listed = db.items.getSearchIndexes();
assert.strictEqual(listed.length, 1);
assert.strictEqual(listed[0].name, "vec");
assert.strictEqual(listed[0].type, "vectorSearch");
assert.strictEqual(listed[0].queryable, true);

const search = (extra) => db.items.aggregate([
  { $vectorSearch: Object.assign({ index: "vec", path: "v", queryVector: [1, 0], numCandidates: 10, limit: 2 }, extra) },
  { $project: { _id: 1, score: { $meta: "vectorSearchScore" } } },
]).toArray();
const hits = search({});
same(hits.map((d) => d._id), [1, 2]);
assert.ok(hits[0].score === 1 && Math.abs(hits[1].score - 0.9) < 1e-6, JSON.stringify(hits));
same(search({ filter: { cat: "a" } }).map((d) => d._id), [1, 3]);

db.items.updateSearchIndex("vec", {
  fields: [{ type: "vector", path: "v", numDimensions: 2, similarity: "euclidean" }],
});
same(search({}).map((d) => d._id), [1, 2]);
let failed = null;
try {
  search({ filter: { cat: "a" } });
} catch (e) {
  failed = e;
}
assert.ok(failed && failed.code === 2 && /needs to be indexed as filter/.test(failed.message), String(failed));

db.items.dropSearchIndex("vec");
assert.strictEqual(db.items.getSearchIndexes().length, 0);
same(search({}), []);

print("vector ok");
