// Package ddl owns catalog changes beyond the catalog record itself.
//
// Specifications: create's collection options (options.go, clustered.go, timeseries.go),
// index specifications as createIndexes accepts and listIndexes reports them (index_spec.go),
// and collMod, parsed (collmod_args.go) and planned against the collection before anything
// changes (collmod_plan.go: what changes, what the reply reports, what is refused).
//
// Execution (Runner): index builds — entries written from a snapshot while writers keep the
// building index in step, then the index marked ready — and their abort; the deletion of a
// dropped index's entries; the duplicate scan that converts an index to unique
// (collmod_unique.go); and the TTL monitor, which deletes expired documents through the
// write path (index_ttl.go).
//
// Invariants: an index is used by the planner only once ready, and maintained by writers
// from the moment it is in the catalog; callers hold the DDL lock for every catalog change.
//
//	x := ddl.New(cat, writePath, log, ddl.Options{Deleted: &deletedDocs})
//	x.StartTTL()
//	defer x.Close()
//	err := x.Build(ctx, coll, specs)
package ddl
