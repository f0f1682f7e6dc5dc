// Package catalog is execution's view of collections and shards.
//
// It owns:
//   - the Shard interface (Reader, Snapshot, Batch, iterators): every read and write of a
//     shard goes through it, so a shard on another node can drop in where Local adapts a
//     Pebble store in this process;
//   - Coll and Index, a catalog record compiled for execution (key generators, shard key,
//     partition map, time-series and clustered options), cached per catalog version; a
//     wildcard index's keys are (path, value) per leaf (wildcard.go), a compound one's
//     with its regular fields' values around them (wildcard_compound.go);
//   - Catalog: lookups (Lookup, ForWrite creates a collection on first insert, Refresh),
//     the key locks writers hold, and the DDL lock, which it alone owns (LockDDL): catalog
//     changes run one at a time, and Barrier waits out the writers that saw the old record;
//   - shard-key hashing (Coll.ShardHash, IDHash) and the index-use counters of $indexStats;
//   - Overlay, a transaction's buffered writes read on top of a snapshot (OverlayReader)
//     and written through a Batch, so that reads and writes in a transaction run unchanged;
//   - Peers, the one way to another node's shard, and the head every compact internal
//     request starts with (CompactHead: collection, id, catalog revision, shard), with its
//     one-pass decoder (DecodeCompact), which a point read and a single-document update share.
//
// Invariants: a Coll is immutable and derived from exactly one catalog version (a catalog
// change compiles a new one); ShardHash is 0 for an unsharded collection and the hash of the
// hashed shard-key field otherwise, so a document's (hash, _id) key places it in exactly one
// partition.
//
//	cat := catalog.New(shards, storeCatalog, log)
//	ci, err := cat.Lookup("db", "coll") // nil, nil when it does not exist
//	h, err := ci.ShardHash(doc)        // the partition is ci.Map's range holding h
package catalog
