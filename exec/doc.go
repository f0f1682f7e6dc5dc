// Package exec answers MongoDB commands. It is the composition root: the Executor builds the
// server's services (exec/command.Server) with the command families above them, implements
// wire.Handler (conn.go: one connection's commands, one at a time, each reply built in a
// reused buffer, each command under a cancellable context the connection keeps until killOp
// or a disconnect cancels it: a context derived from it is cancelled by whoever derived it,
// not by the command's end), and dispatches every command (dispatch.go) through the steps
// MongoDB runs around it, in MongoDB's order: the command's lookup in the table, the Stable
// API's checks (api_version.go), the failCommand failpoint (failcommand.go), access control
// (authorize.go), the statement's transaction or snapshot read (txn.go), the cluster time,
// the router's retries after StaleConfig (stale.go); then the error labels (labels.go) and
// the write concerns one copy cannot satisfy (write_concern.go). It is the one place a Go
// error becomes MongoDB's {ok: 0} reply.
//
//	where is …                                            package
//	the kit: requests, the command table, the services     exec/command
//	the commands, by family                                exec/command/{server,users,colls,crud,node}
//	users, roles, authentication                           exec/access
//	cursors; sessions; transactions and snapshot reads     exec/cursor, exec/session, exec/txn
//	the cluster time; runtime parameters; failpoints       exec/clock, exec/params, exec/failpoint
//	other nodes' shards, sizes across shards               exec/route
//	the Prometheus collector                               exec/metrics
//	collections, indexes, the DDL lock, the Shard seam     exec/catalog
//	the planner, scans; the write path                     exec/query, exec/write
//	splits, moves, config.*; index builds, TTL             exec/sharding, exec/ddl
//	aggregation; the query languages                       exec/agg, exec/{match,update,project,expr}
//
// Imports point down only: internal/archtest's layout test (per-package allow-lists) and the
// linter's depguard rules fail on a package that reaches up.
package exec
