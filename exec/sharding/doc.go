// Package sharding executes shard's partitioning decisions for one process's shards, and in
// a cluster moves partitions between nodes (move_remote.go), balances onto every node that
// is up when this node is the elected manager (cluster_view.go) and drains shards (drain.go).
//
// The Manager (state.go) runs a background loop (manager.go) that looks at each sharded
// collection's partitions — bytes, documents and measured RU/s — and applies what
// shard.Policy decides: splits (a catalog change only: documents are ordered by hash, so a
// partition is a key range), moves to another shard (move.go: copy the range, rebuild its
// index entries (move_copy.go), catch up from the source's write log (catchup.go), commit
// the ownership change, then delete the source range after a grace period
// (move_retire.go)), and the conversion of a filled collection to a sharded one
// (convert.go). The balancer's switch (balancer.go, config.settings) turns the moves it
// decides on its own off and on. Zones (zones.go) give the policy each collection's zone
// ranges as positions with their shards (zones_pending.go keeps the ranges of a namespace not
// sharded yet, and lays out its first partitions along them); split_manual.go splits by hand (the split command).
// It keeps the config.* collections mongosh and drivers read (config.go). Commands that
// raise a collection's throughput split it at once with SplitTo; Throughput
// (throughput.go) says what a collection is provisioned with, its own offer or its share
// of its database's.
//
// It plugs into the rest of the server through interfaces those packages declare: it is
// the write path's write.StageHook (the logical-partition limit and write metering) and
// the reads' meters (query.Options.Meters). Neither write nor query imports it.
//
// Invariants: every ownership change is one atomic catalog update taken under the DDL lock
// and every key-lock stripe; a moved range is deleted from its source only after every
// stream that loaded the old map has taken its snapshots.
//
//	m := sharding.New(cat, log, sharding.Options{Partitioning: shard.Options{...}})
//	w := write.NewPath(cat, q, m) // m sees every staged write
//	m.Start(w)
//	defer m.Close()
package sharding
