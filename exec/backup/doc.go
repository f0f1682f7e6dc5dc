// Package backup takes online backups of a node's shards at one cluster time: the backup
// command's work (docs/backup.md). In cluster mode the node running the command coordinates
// (RunCluster) and every node takes its part (Node: prepare, checkpoint, release, digest). It owns the write gate, which every write command passes
// from before it writes until its reply's operationTime is ticked, and Run, which closes the
// gate and takes every key lock for as long as the shards' Pebble checkpoints take:
//
//	var g backup.Gate
//	g.Enter()                    // a write command, around its work and its operationTime
//	...
//	g.Leave()
//	res, err := backup.Run(ctx, backup.Options{Dir: "/backups/1", Cat: cat, Gate: &g, Tick: clock.Tick})
//
// # Invariants
//
//   - The backup holds every write whose command's operationTime is before its cluster time
//     (Result.ClusterTime), and none whose operationTime is after it: a write command enters
//     the gate before it writes and leaves it after its operationTime is ticked, and the
//     cluster time is ticked while the gate is closed. Writes that pass no gate (TTL deletes,
//     the session reaper) are cut by the key locks; catalog changes by the DDL lock.
//   - Writes wait only while the writes under way drain (at most DrainTimeout, after which
//     the backup lets them go and retries) and the checkpoints are taken (memtables are
//     flushed before, so the WAL each checkpoint copies is short): Result.Pause, which the
//     manifest records.
//   - In a cluster, the cluster time is the latest of every node's clock once every node's
//     gate is closed, and every clock moves to it before any gate opens: a write's
//     operationTime, ticked in the gate of the node its client uses, is on one side of it on
//     every node.
//   - The manifest is written last, through a rename: a backup directory with a manifest is
//     complete, and its digests are of the checkpoints themselves (store.DigestDir).
package backup
