package query

import (
	"context"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The shards of one query read at the same time: when a query reads more than one shard,
// each shard's stream runs ahead of its consumer in its own goroutine and hands over
// batches of copied documents, like the Cosmos DB SDK's parallel cross-partition query.
// Two bounds apply, as in that SDK:
//   - --max-parallelism (MaxDegreeOfParallelism): how many of a query's shards read at once.
//     A reader holds its slot only while it fills a batch, never while it waits for the
//     consumer, so a k-way merge that needs the next document of a shard whose reader is
//     idle cannot deadlock.
//   - prefetchBatches × (prefetchDocs or prefetchBytes) (MaxBufferedItemCount): how far a
//     reader runs ahead; a cursor left open between getMores holds at most that much.
//
// A reader's first batch is small (firstPrefetchDocs) and each next one twice as large, so
// that a query that needs few documents (a sort with a small limit merged across shards)
// does not read far ahead; and when the query's limit applies to each shard's output (no
// blocking sort follows), a reader stops after limit+skip documents, as mongos pushes the
// limit down to the shards. A limit within MaxReadAhead starts no reader at all: the merge
// then pulls from each shard only the documents it needs, where readers each read up to the
// limit (BenchmarkSortLimit/sharded64: half the CPU).
const (
	firstPrefetchDocs = 16
	prefetchDocs      = 256
	prefetchBytes     = 1 << 20
	prefetchBatches   = 2
)

// MaxReadAhead is the most documents a shard reader reads ahead of its consumer.
const MaxReadAhead = prefetchBatches * prefetchDocs

// docBatch is a run of documents read by a prefetching shard reader.
type docBatch struct {
	arena []byte
	ends  []int     // ends[i] is where document i ends in arena
	stats ScanStats // the reader's totals when the batch was sent
	err   error
	last  bool // the reader is done: no batch follows
	// ats are the documents' positions, their keys one after another in keys, kept when
	// the stream may yield (prefetch.positions).
	ats  []batchAt
	keys []byte
}

// batchAt is the position of a document of a docBatch (resumeAt), its key ending at end in
// the batch's keys, where the previous one's ends.
type batchAt struct {
	branch, rng int32
	end         int
}

// batchPool recycles batches across queries, so that the arenas of a query's readers are
// not garbage for every query.
var batchPool = sync.Pool{New: func() any { return new(docBatch) }}

// maxPooledArena is the largest arena kept for reuse.
const maxPooledArena = 2 * prefetchBytes

// release returns b to the pool.
func (b *docBatch) release() {
	if cap(b.arena) > maxPooledArena {
		return
	}
	b.arena, b.ends, b.err, b.last = b.arena[:0], b.ends[:0], nil, false
	b.ats, b.keys = b.ats[:0], b.keys[:0]
	batchPool.Put(b)
}

// prefetch is the consumer side of a shard reader running ahead in a goroutine.
type prefetch struct {
	rd     *ShardStream // the reader: owns the snapshot and iterators
	sem    chan struct{}
	ch     chan *docBatch
	free   chan *docBatch
	cancel context.CancelFunc
	done   chan struct{}
	cur    *docBatch
	i      int
	// reader side: the next batch's size, and how many more documents may be read (-1:
	// no bound).
	batchDocs int
	remaining int64
	// positions: the reader records each document's position, so that the stream can
	// yield (scan_yield.go); limit is the most documents the consumer can need (0: all),
	// taken how many it took, last the position of the last one of the batches it is done
	// with, and stopped that the reader was stopped by a yield and starts again at the next
	// Next.
	positions bool
	limit     int64
	taken     int64
	last      resumeAt
	stopped   bool
	// held are the batches read ahead before a yield, in order, which the consumer reads
	// before the reader's next ones, and yieldAt what a yield left (scan_prefetch_yield.go).
	held    []*docBatch
	yieldAt yieldState
}

// NewParallelism returns the slots that bound how many of a query's n shard readers run at
// once, or nil when nothing bounds them.
func (g *Engine) NewParallelism(n int) chan struct{} {
	if p := g.opts.MaxParallelism; p > 0 && p < n {
		return make(chan struct{}, p)
	}
	return nil
}

// startPrefetch moves ss's reading into a goroutine: from now on ss.next serves documents
// read ahead by a copy of the stream, which owns the snapshot and the iterators. sem, shared
// by the query's streams, bounds how many read at once (nil: unbounded); limit > 0 is the
// most documents the consumer can need from this shard.
func (ss *ShardStream) startPrefetch(sem chan struct{}, limit int64) {
	rd := new(ShardStream)
	*rd = *ss
	ss.snap, ss.docIt, ss.idxIt, ss.fetchIt, ss.batch, ss.rem = nil, nil, nil, nil, nil, nil
	ctx, cancel := context.WithCancel(context.Background())
	pf := &prefetch{
		rd:     rd,
		sem:    sem,
		ch:     make(chan *docBatch, prefetchBatches),
		free:   make(chan *docBatch, prefetchBatches+1),
		cancel: cancel,
		done:   make(chan struct{}),

		batchDocs: firstPrefetchDocs,
		remaining: -1,
	}
	if limit > 0 {
		pf.remaining, pf.limit = limit, limit
	}
	pf.positions = rd.rem == nil && rd.yieldable() && !rd.mayMeetTwice() && rd.p.Kind != PlanIDs
	ss.pf = pf
	go pf.run(ctx)
}

// run is the reader goroutine: it fills batches until the stream ends, fails or is closed.
func (pf *prefetch) run(ctx context.Context) {
	defer close(pf.done)
	for {
		var b *docBatch
		select {
		case b = <-pf.free:
			b.arena, b.ends, b.err, b.last = b.arena[:0], b.ends[:0], nil, false
			b.ats, b.keys = b.ats[:0], b.keys[:0]
		default:
			b = batchPool.Get().(*docBatch)
		}
		if pf.sem != nil {
			select {
			case pf.sem <- struct{}{}:
			case <-ctx.Done():
				b.release()
				return
			}
		}
		pf.fill(ctx, b)
		if pf.sem != nil {
			<-pf.sem
		}
		last := b.last // b is the consumer's once sent
		select {
		case pf.ch <- b:
		case <-ctx.Done(): // stopped (Close, or a yield, which reads the batch's documents again)
			b.release()
			return
		}
		if last {
			return
		}
	}
}

// fill reads documents into b until it is full or the stream ends or fails.
func (pf *prefetch) fill(ctx context.Context, b *docBatch) {
	defer func() { b.stats = pf.rd.Stats }()
	n := pf.batchDocs
	pf.batchDocs = min(2*pf.batchDocs, prefetchDocs)
	for len(b.ends) < n && len(b.arena) < prefetchBytes {
		if pf.remaining == 0 {
			b.last = true
			return
		}
		d, err := pf.rd.read(ctx)
		if err != nil {
			b.err, b.last = err, true
			return
		}
		if d == nil {
			b.last = true
			return
		}
		b.arena = append(b.arena, d...)
		b.ends = append(b.ends, len(b.arena))
		if pf.positions {
			at, _ := pf.rd.lastAt(b.keys)
			b.keys = at.key
			b.ats = append(b.ats, batchAt{branch: int32(at.branch), rng: int32(at.rng), end: len(b.keys)})
		}
		if pf.remaining > 0 {
			pf.remaining--
		}
	}
}

// Next returns the next document read ahead; stats receives the reader's totals as of the
// batch it comes from. The document is valid until the following call.
func (pf *prefetch) Next(ctx context.Context, stats *ScanStats) (bsoncore.Document, error) {
	if pf.stopped {
		pf.restart()
	}
	for {
		if b := pf.cur; b != nil {
			if pf.i < len(b.ends) {
				start := 0
				if pf.i > 0 {
					start = b.ends[pf.i-1]
				}
				pf.i++
				pf.taken++
				return b.arena[start:b.ends[pf.i-1]], nil
			}
			if b.last {
				return nil, b.err
			}
			if pf.positions && len(b.ats) > 0 {
				pf.last = b.at(len(b.ats) - 1).copyTo(pf.last.key)
			}
			select {
			case pf.free <- b:
			default:
				b.release()
			}
			pf.cur = nil
		}
		if len(pf.held) > 0 {
			pf.cur, pf.i, pf.held = pf.held[0], 0, pf.held[1:]
			*stats = pf.cur.stats
			continue
		}
		select {
		case b := <-pf.ch:
			pf.cur, pf.i = b, 0
			*stats = b.stats
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// stop ends the reader and waits for it; the reader's stream is then closed, its batches go
// back to the pool and its final totals are returned.
func (pf *prefetch) stop() ScanStats {
	pf.cancel()
	<-pf.done
	pf.rd.Close()
	pf.drain()
	return pf.rd.Stats
}

// at returns the position of document i of b (its key points into b).
func (b *docBatch) at(i int) resumeAt {
	start := 0
	if i > 0 {
		start = b.ats[i-1].end
	}
	a := b.ats[i]
	return resumeAt{branch: int(a.branch), rng: int(a.rng), key: b.keys[start:a.end:a.end]}
}

// drain gives the batches read ahead back to the pool.
func (pf *prefetch) drain() {
	if pf.cur != nil {
		pf.cur.release()
		pf.cur, pf.i = nil, 0
	}
	for _, b := range pf.held {
		b.release()
	}
	pf.held = pf.held[:0]
	for {
		select {
		case b := <-pf.ch:
			b.release()
		case b := <-pf.free:
			b.release()
		default:
			return
		}
	}
}
