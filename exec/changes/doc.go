// Package changes is what change streams read: every document write and DDL operation leaves
// a change record in its shard's change log (store's 'e' keys), written in the same atomic
// batch as the write and stamped with the batch's cluster time, the way MongoDB's oplog
// entries are; a change stream reads the logs of the shards it watches, merges them in
// cluster-time order up to the time every shard has made visible, and turns the records into
// change events.
//
// Records (record.go) carry the operation, the namespace, the documentKey, the inserted or
// replacing document (an insert's by reference to the document its batch writes, Write.ByRef:
// the log reads it back with the record, store's changes_ref.go), an update's description (diff.go, computed from the old and new
// documents when the write is staged), the pre- and post-images when the collection keeps
// them (changeStreamPreAndPostImages), and a transaction's lsid and txnNumber (TagTxn, added
// at its commit, where all of its records share the commit's time).
//
//	rec := changes.AppendRecord(nil, ci, &changes.Write{Old: old, New: new})
//	batch.AddChange(rec) // written at the batch's time, atomically with it
package changes
