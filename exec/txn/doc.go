// Package txn holds multi-document transactions within one shard and the snapshots of
// snapshot reads. A transaction binds to the shard its first operation reaches and takes
// one snapshot of it; its reads see that snapshot with its own writes on top
// (catalog.Overlay), and its writes stage into the overlay, so the query engine and the write
// path run unchanged over the transaction's shard views. Commit checks, under the key locks,
// that nothing it wrote changed since the snapshot and commits the overlay with the
// session's transaction record in one atomic batch. Snapshots keeps, by cluster time, the
// shard snapshots that readConcern "snapshot" reads outside a transaction read at.
//
//	reg := txn.NewRegistry(cat, dropCreated)
//	reg.Use(writePath)
//	tx := reg.Begin(lsid, 1)
//	... run statements with tx.Write ...
//	rt, err := reg.Commit(tx)
package txn
