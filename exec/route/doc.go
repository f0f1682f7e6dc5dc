// Package route reaches the shards of a collection wherever they are. Nodes is the router's
// side of remote execution: a pool of internal connections to the other nodes of the
// cluster, authenticated with the cluster's key, over which a shard's part of a read
// (_cleaveShardFind, query.Remote), of an index build or drop (_cleaveShardIndexes,
// ddl.Remote), of a move (sharding.Peers), of a write (_cleaveShardWrite, _cleaveShardModify)
// and of statistics or validation (_cleaveShardStats) goes to the node that owns the shard.
// Every request carries the router's catalog revision; the owner catches up to it, and
// answers StaleConfig when its own map of the shard differs. Router answers what spans a
// collection's shards: its sizes and counts, summed over this node's shards and the other
// nodes' answers, and whether it spans other nodes at all.
package route
