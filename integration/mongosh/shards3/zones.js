// Zones, splits by hand and a refined key as a user types them in mongosh, on three shards:
// sh.addShardToZone, sh.updateZoneKeyRange, sh.splitAt, sh.splitFind, mergeChunks,
// sh.removeRangeFromZone, sh.removeShardFromZone, refineCollectionShardKey.
const assert = require("assert");

const name = db.getName();
const ns = name + ".zoned";
const config = db.getSiblingDB("config");
// mongosh awaits its helpers' promises only at statement level, so refusals are caught with
// try/catch rather than assert.throws(() => ...).
let err;
assert.strictEqual(sh.enableSharding(name).ok, 1);
assert.strictEqual(sh.shardCollection(ns, { x: 1 }).ok, 1);
const docs = [];
for (let i = 0; i < 600; i++) {
  docs.push({ _id: i, x: i });
}
db.zoned.insertMany(docs);

// Splits by hand, before any zone: the balancer does not split or move anything meanwhile.
assert.strictEqual(sh.splitAt(ns, { x: 100 }).ok, 1);
assert.strictEqual(sh.splitFind(ns, { x: 500 }).ok, 1);
err = null;
try { sh.splitAt(ns, { x: 100 }); } catch (e) { err = e; }
assert.ok(err && /is a boundary key of existing chunk/.test(err.message), String(err));

assert.strictEqual(sh.addShardToZone("shard-1", "LOW").ok, 1);
assert.strictEqual(sh.addShardToZone("shard-2", "HIGH").ok, 1);
assert.strictEqual(sh.updateZoneKeyRange(ns, { x: MinKey }, { x: 200 }, "LOW").ok, 1);
assert.strictEqual(sh.updateZoneKeyRange(ns, { x: 400 }, { x: MaxKey }, "HIGH").ok, 1);
err = null;
try { sh.updateZoneKeyRange(ns, { x: 150 }, { x: 450 }, "HIGH"); } catch (e) { err = e; }
assert.ok(err && err.code === 178, String(err));
err = null;
try { sh.updateZoneKeyRange(ns, { x: 1 }, { x: 2 }, "NOPE"); } catch (e) { err = e; }
assert.ok(err && err.code === 177, String(err));
err = null;
try { sh.removeShardFromZone("shard-1", "LOW"); } catch (e) { err = e; }
assert.ok(err && err.code === 163, String(err));
assert.strictEqual(config.tags.countDocuments({ ns: ns }), 2);
assert.strictEqual(JSON.stringify(config.shards.findOne({ _id: "shard-2" }).tags), JSON.stringify(["HIGH"]));


// The balancer splits at 200 and 400 and moves each zone's chunks to its shard.
function placed() {
  return config.chunks.find({ ns: ns }).toArray().every((c) => {
    const lo = c.min.x, hi = c.max.x;
    const below = (v, n) => v instanceof MinKey || (typeof v === "number" && v <= n);
    const above = (v, n) => v instanceof MaxKey || (typeof v === "number" && v >= n);
    if (below(hi, 200) && c.shard !== "shard-1") return false;
    if (above(lo, 400) && c.shard !== "shard-2") return false;
    return true;
  });
}
const deadline = Date.now() + 60000;
while (!placed()) {
  assert.ok(Date.now() < deadline, JSON.stringify(config.chunks.find({ ns: ns }).toArray()));
  sleep(200);
}
const bounds = config.chunks.find({ ns: ns }).toArray().map((c) => c.min.x).filter((v) => typeof v === "number");
assert.ok(bounds.includes(200) && bounds.includes(400) && bounds.includes(100), JSON.stringify(bounds));
const plan = db.zoned.find({ x: 450 }).explain().queryPlanner.winningPlan;
assert.strictEqual(plan.stage, "SINGLE_SHARD");
assert.strictEqual(plan.shards[0].shardName, "shard-2");
const status = sh.status().value;
assert.ok(status.shards.some((s) => s._id === "shard-1" && s.tags.includes("LOW")), JSON.stringify(status.shards));

// [MinKey, 100) and [100, 200) are both LOW's, on shard-1: they merge.
assert.strictEqual(db.adminCommand({ mergeChunks: ns, bounds: [{ x: MinKey }, { x: 200 }] }).ok, 1);
assert.strictEqual(config.chunks.countDocuments({ ns: ns, "max.x": 100 }), 0);

assert.strictEqual(sh.removeRangeFromZone(ns, { x: MinKey }, { x: 200 }).ok, 1);
assert.strictEqual(sh.removeShardFromZone("shard-1", "LOW").ok, 1);
assert.strictEqual(config.tags.countDocuments({ ns: ns }), 1);

db.zoned.createIndex({ x: 1, y: 1 });
assert.strictEqual(db.adminCommand({ refineCollectionShardKey: ns, key: { x: 1, y: 1 } }).ok, 1);
assert.strictEqual(JSON.stringify(config.collections.findOne({ _id: ns }).key), JSON.stringify({ x: 1, y: 1 }));
assert.strictEqual(db.zoned.find({ x: 450 }).itcount(), 1);
assert.strictEqual(db.zoned.countDocuments({}), 600);
print("zones ok");
