package query

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"sync"
)

// An index whose order is not the documents' key order (readingTime in a collection sharded
// on hashed deviceId) sends an index scan's fetches all over the shard's keys: each is a
// search of every memtable and level, and the data blocks it lands in are looked up again
// and again. A caller that does not need the index's order (a $group whose accumulators
// ignore order: Query.Unordered) lets the stream read a batch of entries, sort them by
// document key, and fetch them through one iterator whose seeks then move forward, each
// continuing from the last, mostly in the block the last one read (BenchmarkAggWindow/Shards2:
// 2.9 -> 1.9 us of CPU per document examined). A sample of a fifth of 100,000 documents
// fetched by Get cost 2.9 us each, in sorted batches of 4,096 1.2 us, all sorted at once 0.76.
//
// fetchBatchEntries and fetchBatchBytes bound a batch: its keys (hash and _id, about 20
// bytes each) are all it holds, and a larger batch puts more of its fetches in the same
// block; long _ids (strings, documents) end a batch at fetchBatchBytes of them.
const (
	fetchBatchEntries = 4096
	fetchBatchBytes   = 256 << 10
)

// fetchBatch is a batch of index entries, sorted by document key, and the next to fetch.
type fetchBatch struct {
	ids  []byte // the entries' _ids, one after another
	ents []batchEntry
	next int
	done bool // the index scan is over: no batch follows this one
}

// batchEntry is one entry of a fetchBatch: the document's hash and where its _id is in ids.
type batchEntry struct {
	hash       uint64
	start, end int
}

// unordered makes the stream fetch an index scan's documents in key order, a batch at a
// time. Only a stream that reads every document its ranges hold may: one with a limit would
// examine documents past it. A keys-only stream reads no document.
func (ss *ShardStream) unordered() {
	if (ss.p.Kind == PlanIndex || ss.p.Kind == PlanOr) && ss.limit == 0 && !ss.keysOnly {
		ss.batch = batches.Get().(*fetchBatch)
	}
}

// batches recycles fetch batches across queries: a batch's arrays are garbage otherwise.
var batches = sync.Pool{New: func() any { return new(fetchBatch) }}

// release returns b to batches.
func (b *fetchBatch) release() {
	if cap(b.ids) > 2*fetchBatchBytes {
		return // a batch of long _ids went past the bound by one: the collector frees it
	}
	b.ids, b.ents, b.next, b.done = b.ids[:0], b.ents[:0], 0, false
	batches.Put(b)
}

// nextSorted is nextEntry for an unordered stream: the next entry of the batch, read and
// sorted when the last one is done. id is valid until the batch's next fill.
func (ss *ShardStream) nextSorted(ctx context.Context) (hash uint64, id []byte, ok bool, err error) {
	b := ss.batch
	for b.next == len(b.ents) {
		if b.done {
			return 0, nil, false, nil
		}
		if err := ss.fillBatch(ctx); err != nil {
			return 0, nil, false, err
		}
	}
	e := b.ents[b.next]
	b.next++
	return e.hash, b.ids[e.start:e.end], true, nil
}

// fillBatch reads the next batch of entries from the index scan and sorts them by key.
func (ss *ShardStream) fillBatch(ctx context.Context) error {
	b := ss.batch
	b.ids, b.ents, b.next = b.ids[:0], b.ents[:0], 0
	for len(b.ents) < fetchBatchEntries && len(b.ids) < fetchBatchBytes {
		hash, id, ok, err := ss.nextEntry(ctx)
		if err != nil {
			return err
		}
		if !ok {
			b.done = true
			break
		}
		start := len(b.ids)
		b.ids = append(b.ids, id...)
		b.ents = append(b.ents, batchEntry{hash: hash, start: start, end: len(b.ids)})
	}
	// NB: not cmp.Or, which evaluates both comparisons: the ids are compared only when the
	// hashes tie (the agg workload's 2-shard sort spent 13% of its CPU here).
	slices.SortFunc(b.ents, func(x, y batchEntry) int {
		if c := cmp.Compare(x.hash, y.hash); c != 0 {
			return c
		}
		return bytes.Compare(b.ids[x.start:x.end], b.ids[y.start:y.end])
	})
	return nil
}
