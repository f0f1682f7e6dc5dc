// Package exec answers MongoDB commands: the Executor implements wire.Handler, dispatches
// each command through the command table (dispatch.go) to its handler (one file per command
// or family, cmd_*.go), and turns every Go error into MongoDB's {ok: 0} reply. It owns
// cursors, the session cache (sessions.go), its expiry (session_reap.go) and kill patterns
// (session_kill.go), the checkout of a session by a retryable write (retryable.go), the
// cluster clock (clock.go) and the empty timestamps it fills (empty_ts.go), the Stable API's
// checks (api_version.go), multi-document transactions within one shard (txn.go; their
// write conflicts in txn_conflict.go), the write concerns one copy cannot satisfy
// (write_concern.go), currentOp, failpoints and explain rendering. The work itself
// lives in the packages below it, each owning one thing:
//
//	where is …                                         package
//	argument parsing with MongoDB's IDL errors          exec/args
//	collation specs and their comparison keys           exec/collation
//	collections, indexes, the DDL lock, the Shard seam  exec/catalog
//	document streams: merge, sort, spill                exec/stream
//	the planner, shard scans, parallel readers          exec/query
//	the write path: writer, updates, upserts, retries   exec/write
//	splits, moves, conversion, config.* collections     exec/sharding
//	index builds, TTL, collMod and create options       exec/ddl
//	aggregation stages and the shard/merge split        exec/agg
//	query, update, projection, expression languages     exec/match, exec/update, exec/project, exec/expr
//	geometry: GeoJSON, geo predicates, 2dsphere cells   exec/geo
//
// The Executor wires them together (executor.go): the catalog over the shards; the read
// engine with the partition manager's meters; the write path with the manager as its
// stage hook; the DDL runner; and itself as the aggregation host, which provides the stages
// that write ($out, $merge) or report on the server ($collStats, $indexStats, $currentOp,
// the session stages). Its Prometheus collector (metrics.go) reads the partitions' meters and
// statistics at scrape time; cmd/cleave serves it. Imports point down only: layout_test.go
// and the linter's depguard rules fail on a package that reaches up.
package exec
