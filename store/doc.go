// Package store owns Pebble: one *DB is one Pebble database, which is one shard (cleave runs
// N shards in one process, under <dir>/shard-<n>/). It holds documents, index entries, stats
// counters and — in shard 0's DB — the catalog, with atomic batches, snapshots and bounded
// iterators. It knows no command names and no MongoDB codes: it returns sentinels (ErrNotFound,
// ErrExists, ErrClosed, ...), and it does not interpret keys: callers hand it encoded _ids and
// encoded index keys (bsonx.AppendKey).
//
// # Key layout
//
//	'c' ...                                              catalog records (catalog.go)
//	'm' ...                                              format version, counters, stats
//	'd' | coll u32 BE | hash u64 BE | id                 → document BSON
//	'i' | coll u32 BE | idx u32 BE | key | hash u64 BE | id | len(id) → empty
//	't' | lsid (16 bytes)                                → session transaction record
//	'v' | coll u32 BE | graph u64 BE | node u32 BE        → vector search graph node (derived)
//
// A transaction record holds what a retryable write of the session recorded of the
// statements it executed on this shard; it commits in the same batch as their writes.
// Documents sort by (coll, hash, id), so the documents of a partition (a hash range of a
// collection) form one contiguous key range and a split is a metadata change. Index entries
// sort by (coll, idx, key, hash, id); the trailing length of id, a reversed uvarint, lets
// ParseIndexKey split an entry without knowing how key was built.
//
// # Hash ranges
//
// A hash range is (lo, hi uint64) meaning [lo, hi), where hi == 0 stands for 2^64, the end of
// the 64-bit space: [0, 0) is the whole space, [1<<63, 0) its upper half. The shard package uses
// the same convention; InRange implements it. Unsharded collections keep every document at
// hash 0, except capped ones, whose callers put an increasing record id there (so key order is
// insertion order), and time-series ones (a content-derived slot); the store does not care.
//
// # Invariants
//
//   - Key order is (coll, hash, id) for documents and (coll, idx, key, hash, id) for index
//     entries; ParseIndexKey(AppendIndexKey(...)) returns the parts given.
//   - A committed Batch is atomic; Commit(true) returns after the WAL is synced, and concurrent
//     syncing commits share one fsync (nothing here serializes commits).
//   - An iterator or Snapshot is a consistent point-in-time view; iterators never leave the
//     collection, index or hash range they were opened on.
//   - Stats counters (per collection and per 2^48-wide hash bucket) are merged in the same
//     Pebble batch as the documents, so they are exact and survive crashes with the data,
//     provided every document write records its delta with Batch.AddStats.
//   - Collection IDs are never reused; catalog readers never block and never see a change
//     that is not durable.
//   - A batch that adds documents or index entries never reaches Pebble while the volume's
//     free space is under the reserve (*DiskFullError); after a commit fails in Pebble
//     (ErrIO), no write reaches it again until the DB is reopened (space.go).
//   - DB.GetDoc and DB.IDIndexHashes answer from caches of the latest state (doccache.go,
//     idcache.go) that are exact, never hints: an entry, read from Pebble or stored by the batch
//     that wrote it, is used only while no write of its key has become visible since, and no
//     reader sees one batch's writes half old, half new. Every write of a document or an _id
//     index entry goes through a Batch, which notes it.
//
// # Usage
//
//	db, err := store.Open(store.Options{Dir: "data/shard-0", Logger: logger})
//	cat, err := store.OpenCatalog(db)
//	coll, err := cat.CreateCollection(store.Collection{DB: "test", Name: "people"})
//
//	b := db.NewBatch()
//	b.SetDoc(coll.ID, hash, id, doc)
//	b.SetIndex(coll.ID, store.IDIndexID, id, hash, id)
//	b.AddStats(coll.ID, hash, +1, int64(len(doc)))
//	err = b.Commit(true) // durable when it returns
//	b.Close()
//
//	it, err := db.NewDocIter(coll.ID, 0, 0) // the whole collection
//	for it.Next() {
//		use(it.Hash(), it.ID(), it.Doc())
//	}
//	err = errors.Join(it.Err(), it.Close())
package store
