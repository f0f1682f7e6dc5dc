// Package query plans and runs the reads of one collection.
//
// A Query (filter, sort, skip, limit, projection, hint) is planned per collection: the
// planner (plan.go) picks the access path — point reads by _id (IDHACK), index ranges then
// fetch (IXSCAN + FETCH; the ranges from the filter's bounds, plan_bounds.go), a collection
// scan, or nothing (EOF) — and the partitions that may hold matches (plan_targets.go); a
// wildcard index serves one path the filter bounds, its ranges within that path's entries
// (plan_wildcard.go); a compound one its leading regular fields first, then such a path or
// every path (plan_wildcard_compound.go). Engine.Open then reads each targeted shard through a ShardStream
// (scan.go) from a snapshot (a new one after each yield of a cursor reading the present,
// scan_yield.go), in parallel and bounded (scan_parallel.go), and combines the
// shards' streams with exec/stream: a k-way merge when the plan yields the sort order, else
// a concatenation and a blocking sort; then skip, limit and projection.
//
// It sees shards only through catalog.Shard. What it needs from the rest of the server is
// injected through Options: the spill store and sort memory bound, the meters that reads
// charge (implemented by sharding, which query never imports) and the index-use counters.
//
// Invariants: a read never examines index keys outside the plan's ranges; a ShardStream's
// Stats (keys and documents examined, bytes read, documents returned) are what explain and
// request units report.
//
//	g := query.New(cat, query.Options{MaxParallelism: 4})
//	f, _ := query.CompileFilter(filter)
//	s, plan, shards, err := g.Open(&query.Query{CI: ci, Filter: f, Sort: sort, Limit: 10})
package query
