// Transactions as a user types them in mongosh (issue 15): startTransaction, reads of the
// transaction's own writes, commitTransaction, abortTransaction.
const assert = require("assert");

const name = db.getName();
db.acct.insertMany([{ _id: "a", bal: 100 }, { _id: "b", bal: 100 }]);

const session = db.getMongo().startSession();
const acct = session.getDatabase(name).getCollection("acct");
session.startTransaction();
acct.updateOne({ _id: "a" }, { $inc: { bal: -30 } });
acct.updateOne({ _id: "b" }, { $inc: { bal: 30 } });
assert.strictEqual(acct.findOne({ _id: "a" }).bal, 70);
assert.strictEqual(db.acct.findOne({ _id: "a" }).bal, 100); // not committed yet
session.commitTransaction();
assert.strictEqual(db.acct.findOne({ _id: "a" }).bal, 70);
assert.strictEqual(db.acct.findOne({ _id: "b" }).bal, 130);

session.startTransaction();
acct.insertOne({ _id: "c", bal: 1 });
assert.strictEqual(acct.countDocuments({}), 3);
session.abortTransaction();
assert.strictEqual(db.acct.countDocuments({}), 2);
session.endSession();
print("txn ok");
