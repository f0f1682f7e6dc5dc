// Databases, collections and indexes as a user manages them in mongosh.
const assert = require("assert");

db.dropDatabase();
db.createCollection("people", { validator: { age: { $gte: 0 } } });
db.people.insertMany([{ name: "ann", age: 30 }, { name: "bob", age: 40 }, { name: "cy", age: 30 }]);

// show dbs / show collections run listDatabases and listCollections.
const dbs = db.adminCommand({ listDatabases: 1 }).databases.map((d) => d.name);
assert.ok(dbs.includes(db.getName()), JSON.stringify(dbs));
assert.strictEqual(JSON.stringify(db.getCollectionNames()), JSON.stringify(["people"]));
const info = db.getCollectionInfos({ name: "people" })[0];
assert.strictEqual(info.type, "collection");
assert.strictEqual(info.options.validationLevel, "strict");

// Indexes.
assert.strictEqual(db.people.createIndex({ name: 1 }, { unique: true }), "name_1");
assert.strictEqual(db.people.createIndex({ age: 1, name: -1 }), "age_1_name_-1");
const names = db.people.getIndexes().map((x) => x.name);
assert.strictEqual(JSON.stringify(names), JSON.stringify(["_id_", "name_1", "age_1_name_-1"]));
assert.strictEqual(db.people.getIndexes()[1].unique, true);
let code = 0;
try { db.people.insertOne({ name: "ann", age: 1 }); } catch (e) { code = e.code; }
assert.strictEqual(code, 11000);
assert.strictEqual(db.people.find({ age: 30 }).hint("age_1_name_-1").toArray().length, 2);
code = 0;
try {
  db.runCommand({ createIndexes: "people", indexes: [{ key: { x: 1 }, name: "x_1", foo: 1 }] });
} catch (e) { code = e.code; }
assert.strictEqual(code, 197);
db.people.dropIndex("age_1_name_-1");
assert.strictEqual(db.people.getIndexes().length, 2);
code = 0;
try { db.people.dropIndex("_id_"); } catch (e) { code = e.code; }
assert.strictEqual(code, 72);

// Statistics.
const stats = db.runCommand({ collStats: "people" });
assert.strictEqual(stats.count, 3);
assert.strictEqual(stats.nindexes, 2);
const dbStats = db.stats();
assert.strictEqual(dbStats.collections.toNumber(), 1); // longs, as mongos answers
assert.strictEqual(dbStats.objects.toNumber(), 3);

// Rename and drop.
db.adminCommand({ renameCollection: db.getName() + ".people", to: db.getName() + ".persons" });
assert.strictEqual(JSON.stringify(db.getCollectionNames()), JSON.stringify(["persons"]));
assert.strictEqual(db.persons.find().toArray().length, 3);
assert.strictEqual(db.persons.drop(), true);
assert.strictEqual(db.missing.drop(), true);
assert.strictEqual(JSON.stringify(db.getCollectionNames()), JSON.stringify([]));

print("ddl ok");
