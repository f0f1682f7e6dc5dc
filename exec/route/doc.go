// Package route reaches the shards of a collection wherever they are. Nodes is the router's
// side of remote execution and the node's catalog.Peers, the one way to another node's
// shard: a pool of internal connections to the other nodes of the cluster, authenticated
// with the cluster's key, to the node serving each shard (its leader when it is
// replicated). Every remote step is an internal command sent through it, encoded by the
// package whose step it is — a shard's part of a read (exec/query, _cleaveShardFind), of an
// index build or drop (exec/ddl, _cleaveShardIndexes), of a move (exec/sharding), of a change
// stream (exec/changes, _cleaveShardChanges) — or here: writes (_cleaveShardWrite,
// _cleaveShardModify, and the compact _cleaveShardUpdate of a plain single-document update), statistics or validation (_cleaveShardStats) and a $vectorSearch's
// part (_cleaveShardVectorSearch). Every request
// carries the router's catalog revision; the owner catches up to it, and answers StaleConfig
// when its own map of the shard differs. Router answers what spans a collection's shards:
// its sizes and counts, summed over this node's shards and the other nodes' answers, and
// whether it spans other nodes at all.
package route
