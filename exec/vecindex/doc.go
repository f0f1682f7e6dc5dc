// Package vecindex serves vectorSearch indexes on this node's shards: their records in a
// collection's catalog record (Records, Find), one HNSW graph (exec/vector) per shard, search
// index and vector field (Registry), and a $vectorSearch's search over the shards owning the
// collection's partitions, merged by score as a router merges the shards' top-k.
//
// Invariants:
//   - a graph is derived state, the documents its truth: loaded from its checkpoint in the
//     shard's Pebble (or built when there is none) at its first search after a start and
//     reconciled with the documents in one scan, then kept current from a write log of the
//     collection (store.WriteLog), whose documents each search reads again before it walks
//     the graph, so a search sees every write acknowledged before it began; a log that
//     overflows reconciles the graph again; after each change the nodes it changed are saved
//     (persist.go), unsynced: a checkpoint may lag the documents, which the reconciliation
//     makes up for;
//   - a shard answers only documents of the partitions it owns now (a shard may hold a range
//     it is receiving or has just given away);
//   - a missing index finds nothing, as in MongoDB; a filter reads only declared filter fields.
//
// Usage:
//
//	reg := vecindex.NewRegistry(zap.NewNop())
//	res, err := reg.Search(ci, cat.Shards(), &vecindex.Query{Index: "vec", Path: "v",
//		Vector: q, NumCandidates: 100, Limit: 10})
//	// res.Hits: best first; res.Cost: the work per shard, for the request's charge
package vecindex
