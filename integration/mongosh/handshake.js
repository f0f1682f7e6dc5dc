// The handshake and server commands, as a user types them in mongosh (issue 2).
const assert = require("assert");

assert.strictEqual(db.runCommand({ ping: 1 }).ok, 1);

const version = db.version();
assert.match(version, /^7\.0\.\d+$/, `db.version() = ${version}`);

const hello = db.hello();
assert.strictEqual(hello.isWritablePrimary, true);
assert.strictEqual(hello.msg, "isdbgrid");
assert.strictEqual(hello.maxBsonObjectSize, 16777216);
assert.strictEqual(hello.maxMessageSizeBytes, 48000000);
assert.strictEqual(hello.maxWriteBatchSize, 100000);
assert.strictEqual(hello.logicalSessionTimeoutMinutes, 30);
assert.ok(hello.localTime instanceof Date);
assert.strictEqual(hello.maxWireVersion, 21);
assert.ok(hello.connectionId > 0);

const build = db.adminCommand({ buildInfo: 1 });
assert.strictEqual(build.version, version);
assert.strictEqual(JSON.stringify(build.versionArray.slice(0, 2)), '[7,0]');

const conns = db.serverStatus().connections;
assert.ok(conns.current >= 1, JSON.stringify(conns));
assert.ok(conns.totalCreated >= conns.current, JSON.stringify(conns));

const fcv = db.adminCommand({ getParameter: 1, featureCompatibilityVersion: 1 });
assert.strictEqual(fcv.featureCompatibilityVersion.version, "7.0");

const all = db.adminCommand({ getParameter: "*" });
assert.ok("featureCompatibilityVersion" in all);

// mongosh throws a MongoServerError for {ok: 0} replies.
function serverError(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected a server error");
}

const none = serverError(() => db.adminCommand({ getParameter: 1, noSuchParameter: 1 }));
assert.strictEqual(none.code, 72);
assert.strictEqual(none.errmsg, "no option found to get");

const unknown = serverError(() => db.runCommand({ nosuchcommand: 1 }));
assert.strictEqual(unknown.code, 59);
assert.strictEqual(unknown.codeName, "CommandNotFound");
assert.strictEqual(unknown.errmsg, "no such command: 'nosuchcommand'");

assert.ok(db.adminCommand({ getCmdLineOpts: 1 }).argv.length >= 1);
assert.strictEqual(JSON.stringify(db.adminCommand({ getLog: "*" }).names), '["global","startupWarnings"]');
assert.ok(db.adminCommand({ hostInfo: 1 }).system.numCores >= 1);
assert.ok(db.adminCommand({ whatsmyuri: 1 }).you.startsWith("127.0.0.1:"));
assert.strictEqual(db.runCommand({ connectionStatus: 1 }).authInfo.authenticatedUsers.length, 0);
assert.ok(db.adminCommand({ listCommands: 1 }).commands.ping);
assert.strictEqual(db.adminCommand({ isdbgrid: 1 }).isdbgrid, 1);
assert.strictEqual(db.adminCommand({ getDefaultRWConcern: 1 }).defaultReadConcern.level, "local");
print("handshake ok");
