package store

import "fmt"

// Range deletions. Documents, whole indexes and stats buckets are contiguous key ranges and go
// with Pebble range tombstones (cheap, whatever their size). The index entries of a hash range
// are not contiguous (index keys sort by key first), so DeleteIndexEntriesInRange finds them by
// scanning the index. Callers must make sure nothing writes into a range while it is being
// deleted: it belongs to a dropped collection or to a partition this shard no longer owns.

// DeleteCollectionData deletes everything coll has in this DB: documents, index entries and
// stats. Pending AddStats deltas of coll in this batch are discarded; writes to coll added
// earlier in the batch are deleted too (a range tombstone covers earlier writes of its batch).
func (b *Batch) DeleteCollectionData(coll CollID) error {
	var buf, end [32]byte
	docs := appendDocPrefix(buf[:0], coll)
	if err := b.preserveRange(docs, AppendKeyPrefixEnd(end[:0], docs)); err != nil {
		return err
	}
	b.deleteKeyPrefix(appendDocPrefix(buf[:0], coll))
	b.deleteKeyPrefix(appendIndexCollPrefix(buf[:0], coll))
	b.deleteKeyPrefix(appendStatsCollPrefix(buf[:0], coll))
	b.deleteKeyPrefix(appendGraphCollPrefix(buf[:0], coll))
	_ = b.direct().Delete(appendTotalKey(buf[:0], coll), nil)
	b.dropDeltas(coll)
	adj := b.adjust[:0]
	for _, a := range b.adjust {
		if a.coll != coll {
			adj = append(adj, a)
		}
	}
	b.adjust = adj
	b.resets = append(b.resets, coll)
	b.idAll = true
	return nil
}

// DeleteIndexData deletes every entry of index idx of coll (after dropIndexes, or before a
// rebuild).
func (b *Batch) DeleteIndexData(coll CollID, idx IndexID) {
	var buf [16]byte
	b.deleteKeyPrefix(appendIndexPrefix(buf[:0], coll, idx))
	b.idAll = b.idAll || idx == IDIndexID
}

// deleteKeyPrefix adds a range tombstone over all keys that start with p.
func (b *Batch) deleteKeyPrefix(p []byte) {
	var end [32]byte
	_ = b.direct().DeleteRange(p, AppendKeyPrefixEnd(end[:0], p), nil)
}

// DeleteDocRange deletes the documents of coll with hash in [lo, hi) (hi == 0 meaning 2^64)
// and keeps the stats exact: stats buckets entirely inside the range are range-deleted and
// subtracted from the collection's total; in a bucket the range only partly covers, the
// documents being deleted are counted by scanning them (at most two buckets, each about
// 1/65536 of the collection). It reads the DB's latest committed state, so the batch must hold
// no pending stats for coll (ErrInvalid otherwise). Index entries are left to
// DeleteIndexEntriesInRange.
func (b *Batch) DeleteDocRange(coll CollID, lo, hi uint64) error {
	if hi != 0 && hi <= lo {
		return nil
	}
	for _, d := range b.deltas {
		if d.coll == coll {
			return fmt.Errorf("%w: DeleteDocRange on collection %d with pending stats in the batch", ErrInvalid, coll)
		}
	}
	first, last := int(bucketOf(lo)), int(bucketOf(hi-1))
	fullFirst, fullLast := first, last
	// The first and last buckets may be partly covered: count those documents one by one.
	if partial, err := b.subtractPartial(coll, first, lo, hi); err != nil {
		return err
	} else if partial {
		fullFirst = first + 1
	}
	if last != first {
		if partial, err := b.subtractPartial(coll, last, lo, hi); err != nil {
			return err
		} else if partial {
			fullLast = last - 1
		}
	}
	if fullFirst <= fullLast {
		if err := b.deleteFullBuckets(coll, uint16(fullFirst), uint16(fullLast)); err != nil {
			return err
		}
	}
	var buf [2 * (docPrefixLen + hashLen)]byte
	lower, upper := appendDocRangeBounds(buf[:0], coll, lo, hi)
	if err := b.preserveRange(lower, upper); err != nil {
		return err
	}
	_ = b.direct().DeleteRange(lower, upper, nil)
	b.idAll = true // the cached documents of the range (docCache)
	return nil
}

// subtractPartial subtracts the documents of bucket bk inside [lo, hi) if the range covers the
// bucket only partly, and reports whether it did.
func (b *Batch) subtractPartial(coll CollID, bk int, lo, hi uint64) (bool, error) {
	start, width := clipBucket(uint16(bk), lo, hi)
	if width == bucketSpan {
		return false, nil
	}
	return true, b.subtractScanned(coll, start, start+width) // start+width wraps to 0 = 2^64
}

// subtractScanned counts the committed documents of coll with hash in [lo, hi) (one bucket at
// most) and records their removal with AddStats.
func (b *Batch) subtractScanned(coll CollID, lo, hi uint64) error {
	it, err := newDocIter(b.db.pdb, coll, lo, hi)
	if err != nil {
		return err
	}
	var docs, bytes int64
	for it.Next() {
		doc := it.Doc()
		docs++
		bytes += int64(len(doc))
	}
	if err := it.Err(); err != nil {
		_ = it.Close()
		return err
	}
	if docs != 0 || bytes != 0 {
		b.AddStats(coll, lo, -docs, -bytes)
	}
	return it.Close()
}

// deleteFullBuckets range-deletes the stats buckets [first, last] of coll and subtracts what
// they held from the collection's total.
func (b *Batch) deleteFullBuckets(coll CollID, first, last uint16) error {
	var docs, bytes int64
	lo := uint64(first) << bucketBits
	hi := (uint64(last) + 1) << bucketBits // wraps to 0 (= 2^64) for the last bucket
	err := b.db.readOps.histogram(coll, lo, hi, func(s BucketStat) {
		docs += s.Docs
		bytes += s.Bytes
	})
	if err != nil {
		return err
	}
	var buf [32]byte
	lower, upper := appendBucketBounds(buf[:0], coll, first, last)
	_ = b.direct().DeleteRange(lower, upper, nil)
	if docs != 0 || bytes != 0 {
		b.adjust = addCollDelta(b.adjust, collDelta{coll: coll, docs: -docs, bytes: -bytes})
	}
	return nil
}

// DeleteIndexEntriesInRange deletes the entries of index idx of coll whose hash is in
// [lo, hi), found by scanning the whole index in the DB's latest committed state, and returns
// how many it deleted.
func (b *Batch) DeleteIndexEntriesInRange(coll CollID, idx IndexID, lo, hi uint64) (int, error) {
	it, err := newIndexIter(b.db.pdb, coll, idx, nil, nil, false)
	if err != nil {
		return 0, err
	}
	b.idAll = b.idAll || idx == IDIndexID
	n := 0
	for it.Next() {
		if InRange(it.Hash(), lo, hi) {
			_ = b.direct().Delete(it.it.Key(), nil)
			n++
		}
	}
	if err := it.Err(); err != nil {
		_ = it.Close()
		return n, err
	}
	return n, it.Close()
}

// DeleteCollectionData deletes all of coll's data in this DB in one synced batch: the step
// after DropCollection (on every shard), or the cleanup of an orphan.
func (db *DB) DeleteCollectionData(coll CollID) error {
	b := db.NewBatch()
	defer b.Close()
	if err := b.DeleteCollectionData(coll); err != nil {
		return err
	}
	return b.Commit(true)
}
