// Package compat runs the MongoDB drivers' spec tests against a server and reports, per suite,
// which tests pass, fail or are skipped and why.
//
// It writes no test runner of its own: the spec files and the runners that execute them ship in
// the go.mongodb.org/mongo-driver v1.17 module (testdata/ and mongo/integration/...), and compat
// runs them with `go test -json` on those packages, with MONGODB_URI pointing at the server. What
// compat adds is the glue: the suite table (which go test pattern runs which spec directory), a
// static list of every test in the spec files (so that tests the runner never reached, because
// setup failed or a whole file was skipped, are still counted), the parsing of the test2json
// stream into one result per test with a one-line reason, the summary table, the baseline of
// passing tests that CI checks against, and the known failures (testdata/known.txt, -known):
// for a failing test whose name an entry matches, the table gives the entry's reason (what
// cleave lacks) rather than the runner's message.
//
// The driver module is pinned in this nested module's go.mod so that the server module keeps a
// single driver (v2). tools.go keeps the test-only dependencies of the driver's runners in go.mod.
//
// What the runners send besides the tests' own operations (mongo/integration/mtest, unified/):
//
//   - TestMain (mtest.Setup): the handshake and monitoring (legacy hello over OP_QUERY, then hello,
//     awaitable if the reply has a topologyVersion); ping; buildInfo (version decides the
//     min/maxServerVersion skips; modules); find on config.shards (documents whose host has no
//     "/" mark standalone shards, otherwise, including no documents, the cluster counts as
//     sharded-replicaset, which many transaction and retryable-write tests require);
//     getParameter "*" (runOnRequirements.serverParameters, e.g. enableTestCommands). Teardown:
//     dropDatabase "test" with writeConcern majority; endSessions on disconnect.
//   - TestUnifiedSpec, and per test (unified): killAllSessions [] on admin against every host
//     of the URI (codes 11601 and 13 are tolerated); for each initialData collection drop
//     (NamespaceNotFound tolerated), create (writeConcern majority, or capped/size options), or
//     insert of the documents (ordered, writeConcern majority); distinct key "x" on every
//     collection entity through every host when the test runs distinct (SERVER-39704); the
//     outcome check is find {} sorted by _id with readConcern local (getMore, killCursors);
//     testRunner operations configureFailPoint (failCommand with mode times/skip/alwaysOn and
//     data failCommands, errorCode, closeConnection, errorLabels, writeConcernError;
//     failGetMoreAfterCursorCheckout; onPrimaryTransactionalWrite), listCollections and
//     listIndexes (assertCollection/IndexExists); afterwards configureFailPoint mode "off" for
//     each fail point set, killCursors and endSessions as entities close, and killAllSessions
//     again after tests that started a transaction.
//   - Legacy runners (mongo/integration), per test: create of the test collection (48
//     NamespaceExists tolerated), insert of the data, killAllSessions on every host, drop
//     afterwards, configureFailPoint mode "off".
//
// Prose suites (Suite.Funcs) run the driver's Go test functions for the specs' prose tests in
// mongo/integration. They have no spec files: their tests are the leaf subtests go test -json
// reports under each function, or the function itself when it ran (or was skipped) whole.
//
// Run it with `make compat` (all suites, rewrites the table of docs/compatibility.md and the baseline) or
// `go run ./cmd/compat -uri mongodb://host:port/` against any server.
package compat
