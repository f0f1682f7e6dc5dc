// Package write is the write path: every insert, update, delete and findAndModify, and the
// writes of $out, $merge, index builds and partition moves, goes through a Writer.
//
// A Writer stages document writes of one collection into one atomic batch per shard. Its
// protocol: LockHashes and Lock take the key locks of a group of writes (and move to the
// collection's current catalog version, so a concurrent index build gets this write's
// entries); Stage adds each write — the document, every index entry, the stats — after
// checking unique keys against the store and the writes staged before; Commit applies the
// batches, drops the locks once they are visible and then waits for the WAL sync (unless the
// write concern relaxes it), so that concurrent writers share fsyncs; Release drops the locks
// if Commit was not reached, and the batches.
// Op and Path.Run apply one update or delete statement: find the candidates (through
// query), re-read each under its locks, apply the change, and retry what changed meanwhile.
// A single-document write whose filter fixes _id takes that _id's lock first and reads its
// document once, under it (point.go); the charge is the same either way.
//
// Sharding plugs in through StageHook, which this package declares and never imports: it
// sees each staged write under its locks with the current catalog version and its hashes
// recomputed, and may refuse it (the logical-partition limit) or charge it (meters).
//
// Invariants: a write is staged under the key locks of its _id and of every unique key it
// takes; nothing of a refused write is staged; all of a group's changes on one shard commit
// in one batch.
//
//	wr := path.NewWriter(ci)
//	wr.Lock(wr.LockHashes(nil, &w))
//	defer wr.Release()
//	if err := wr.Stage(&w); err == nil { err = wr.Commit(true) }
package write
