package query

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"unsafe"

	"github.com/cleavedb/cleave/exec/stream"
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
// fetchBatchEntries and fetchBatchBytes bound a batch: its keys (hash and _id, about 30
// bytes each with the entry) are all it holds, and a larger batch puts more of its fetches in
// the same block: each batch sweeps the shard's keys once, so a window of 10,000 readings on
// one shard read in batches of 4,096 swept its blocks three times (16,384 entries, about 0.5
// MiB, the size of a prefetching reader's read-ahead: BenchmarkAggWindow 1,123 -> 1,065 CPU
// ns per document on 2 shards, 951 -> 916 on 1, medians of 3 alternated runs); long _ids
// (strings, documents) end a batch at fetchBatchBytes of them.
const (
	fetchBatchEntries = 16384
	fetchBatchBytes   = 256 << 10
)

// fetchBatchMem is what a full batch holds: its _ids and its entries twice (the radix sort's
// scratch), about 1 MiB. A stream reserves it from the server's memory account
// (stream.Budget, Options.Temp's) when it takes a batch, and releases it when the batch goes
// back to the pool: 32 aggregations over two shards hold 64 batches at once, which the
// account must see, or the sorts and $group tables it bounds would hold that much more.
const fetchBatchMem = fetchBatchBytes + 2*fetchBatchEntries*int64(unsafe.Sizeof(batchEntry{}))

// fetchBatch is a batch of index entries, sorted by document key, and the next to fetch.
type fetchBatch struct {
	ids  []byte // the entries' _ids, one after another
	ents []batchEntry
	tmp  []batchEntry // the radix sort's scratch
	next int
	done bool // the index scan is over: no batch follows this one
	// mem is the batch's share of the server's memory account while a stream holds it (nil:
	// no account): fetchBatchMem, and more when a fill grew the arrays past it.
	mem *stream.Reservation
}

// batchEntry is one entry of a fetchBatch: the document's hash, the first 8 bytes of its
// _id's key (big-endian, zero-padded: pre orders entries as their _ids do wherever they
// differ) and where its _id is in ids.
type batchEntry struct {
	hash, pre  uint64
	start, end int32
}

// unordered makes the stream fetch an index scan's documents in key order, a batch at a
// time. Only a stream that reads every document its ranges hold may: one with a limit would
// examine documents past it. A keys-only stream reads no document. When the server's memory
// account cannot spare a batch (fetchBatchMem), the stream fetches in the index's order,
// holding nothing: slower, the same answer.
func (ss *ShardStream) unordered() {
	if (ss.p.Kind != PlanIndex && ss.p.Kind != PlanOr) || ss.limit != 0 || ss.keysOnly {
		return
	}
	mem := ss.eng.opts.Temp.Budget().NewReservation()
	if !mem.Grow(fetchBatchMem) {
		return
	}
	b := batches.Get().(*fetchBatch)
	b.mem = mem
	ss.batch = b
}

// batches recycles fetch batches across queries: a batch's arrays are garbage otherwise.
var batches = sync.Pool{New: func() any { return new(fetchBatch) }}

// release gives b's memory back to the account and returns b to batches.
func (b *fetchBatch) release() {
	b.mem.Release()
	b.mem = nil
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
		b.add(hash, id)
	}
	b.sort()
	if over := b.footprint() - b.mem.Held(); over > 0 {
		b.mem.Force(over) // held already: long _ids, or an append's slack past the bound
	}
	return nil
}

// footprint is the memory b's arrays hold.
func (b *fetchBatch) footprint() int64 {
	return int64(cap(b.ids)) + int64(cap(b.ents)+cap(b.tmp))*int64(unsafe.Sizeof(batchEntry{}))
}

// add appends the entry of document (hash, id) to b.
func (b *fetchBatch) add(hash uint64, id []byte) {
	start := len(b.ids)
	b.ids = append(b.ids, id...)
	b.ents = append(b.ents, batchEntry{hash: hash, pre: idPrefix(id), start: int32(start), end: int32(len(b.ids))})
}

// sort orders b's entries by document key: by hash with a radix sort, then each run of
// entries that share a hash by _id. A sharded collection's batch (the agg workload's 4,096
// readings on 2 shards: about 500 hashes, runs of 8 whose _ids mostly come in order) spent
// 10% of the query's CPU in a comparison sort, about 120 ns per entry.
func (b *fetchBatch) sort() {
	b.tmp = radixSortByHash(b.ents, b.tmp)
	for i := 0; i < len(b.ents); {
		j := i + 1
		for j < len(b.ents) && b.ents[j].hash == b.ents[i].hash {
			j++
		}
		if j-i > 1 {
			b.sortRun(b.ents[i:j])
		}
		i = j
	}
}

// sortRun orders run, entries that share their hash, by _id: by insertion when short (they
// mostly come in order), else by a comparison sort (an unsharded collection's batch is one
// run, in order only when the index follows _id).
func (b *fetchBatch) sortRun(run []batchEntry) {
	less := func(x, y *batchEntry) bool {
		if x.pre != y.pre {
			return x.pre < y.pre
		}
		return bytes.Compare(b.ids[x.start:x.end], b.ids[y.start:y.end]) < 0
	}
	if len(run) > 16 {
		if !slices.IsSortedFunc(run, func(x, y batchEntry) int { return b.compareIDs(&x, &y) }) {
			slices.SortFunc(run, func(x, y batchEntry) int { return b.compareIDs(&x, &y) })
		}
		return
	}
	for i := 1; i < len(run); i++ {
		for j := i; j > 0 && less(&run[j], &run[j-1]); j-- {
			run[j], run[j-1] = run[j-1], run[j]
		}
	}
}

// compareIDs compares the _ids of two entries: by their first bytes, held in the entries,
// then by the bytes in ids when those tie.
func (b *fetchBatch) compareIDs(x, y *batchEntry) int {
	if x.pre != y.pre {
		return cmp.Compare(x.pre, y.pre)
	}
	return bytes.Compare(b.ids[x.start:x.end], b.ids[y.start:y.end])
}

// radixSortByHash sorts ents by hash, stably, a byte of the hash at a time from the lowest,
// skipping the bytes every entry shares (all of them in an unsharded collection, whose
// documents share hash 0), with tmp as scratch; it returns tmp for reuse.
func radixSortByHash(ents, tmp []batchEntry) []batchEntry {
	if len(ents) < 2 {
		return tmp
	}
	var counts [8][256]int32
	for i := range ents {
		h := ents[i].hash
		for d := range 8 {
			counts[d][byte(h>>(8*d))]++
		}
	}
	tmp = slices.Grow(tmp[:0], len(ents))[:len(ents)]
	src, dst := ents, tmp
	for d := range 8 {
		c := &counts[d]
		if c[byte(ents[0].hash>>(8*d))] == int32(len(ents)) {
			continue // every entry has this byte
		}
		var sum int32
		for v := range c {
			c[v], sum = sum, sum+c[v]
		}
		shift := 8 * d
		for i := range src {
			v := byte(src[i].hash >> shift)
			dst[c[v]] = src[i]
			c[v]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ents[0] {
		copy(ents, src)
	}
	return tmp
}

// idPrefix returns the first 8 bytes of id as a big-endian number, zero-padded: where two
// ids' prefixes differ, they order as the ids do.
func idPrefix(id []byte) uint64 {
	if len(id) >= 8 {
		return binary.BigEndian.Uint64(id)
	}
	var b [8]byte
	copy(b[:], id)
	return binary.BigEndian.Uint64(b[:])
}
