package query

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// ScanStats counts what a shard's part of a query read, for explain and request units.
type ScanStats struct {
	DocsExamined  int64
	KeysExamined  int64
	BytesRead     int64 // of the documents examined
	Returned      int64
	BytesReturned int64 // of the documents returned
	// Point reports reads of documents by key (a point plan): they are charged as point
	// reads, the others as scans.
	Point bool
	// Partitions is how many partitions the stream read (each costs at least shard.MinRU).
	Partitions int
}

// ShardStream runs a plan on one shard: it reads documents through the plan's access path
// from a consistent snapshot and yields those the filter matches.
type ShardStream struct {
	r     catalog.Reader
	snap  catalog.Snapshot // closed with the stream; nil when r is the DB itself
	ci    *catalog.Coll
	p     *Plan
	f     *match.Filter
	Shard int
	// Ranges are the hash ranges the stream reads, sorted: the targeted partitions this shard
	// owns, or, when the query fixes the shard key, the single hashes among them. parts[i]
	// is the partition (its index in the map) of Ranges[i].
	Ranges [][2]uint64
	parts  []int
	// rangesBuf and partsBuf back Ranges and parts while a shard owns few targeted
	// partitions (a point read's one), sparing their allocations.
	rangesBuf [4][2]uint64
	partsBuf  [4]int
	// self backs openShards' list when it starts with this stream, sparing its allocation.
	self  [1]*ShardStream
	Stats ScanStats
	// meters are the collection's partition meters, charged with the reads, and budgets
	// their provisioned throughput (scan_meter.go); nil when nothing is metered or
	// provisioned. admitted is what the stream has taken from the budgets so far.
	meters   *shard.Meters
	budgets  *shard.Budgets
	admitted float64
	started  bool
	refused  bool // a budget refused the stream: it read nothing and costs nothing
	// exact: the plan's index bounds hold only documents the filter matches (filterExact),
	// which examine then counts without evaluating it; keysOnly: the plan's entries are the
	// answer (Plan.KeysOnly). A key the key check cannot measure clears both (keyRefused).
	exact, keysOnly bool

	pos int // next partition (scan), range (index) or id (ids)
	// idIt walks the _id index entries of the _id last taken by a point plan whose hash the
	// plan does not know (ids[pos-1]), one document per entry; idFound counts them, and
	// idEnd backs the iterator's upper bound.
	idIt    catalog.IndexIter
	idFound int
	idEnd   [32]byte
	// idHashes are the hashes of that _id not yet taken, when the shard's cache answered
	// (idHashLookup); idHashBuf backs them.
	idHashes  []uint64
	idHashBuf [2]uint64
	docIt     catalog.DocIter
	idxIt     catalog.IndexIter
	// limit > 0 ends the stream after that many documents (SetLimit).
	limit int64
	// fetchIt fetches the documents of an index scan's entries (fetch), opened at the first,
	// while they come in key order: fetchLast is the last one's key (hash, then _id), and
	// fetchGet is set, for good, by the first that does not.
	fetchIt   catalog.DocIter
	fetchLast []byte
	fetchGet  bool
	// batch, when set, is the entries of the index scan being fetched in key order
	// (scan_batch.go).
	batch *fetchBatch
	seen  map[string]struct{}
	buf   []byte
	// recycle: the caller copies what the stream yields before its next Next or Close
	// (Query.RecycleBuffers), so buf comes from a pool (bufp) and goes back at Close.
	recycle bool
	bufp    *[]byte
	key     []byte // scratch for seen keys
	// seekBuf holds where a key check sends the index iterator (keyCheck.skip); unread is set
	// while the iterator is at the entry that seek found, not read yet.
	seekBuf []byte
	unread  bool
	// skipBuf is where a distinct scan goes next, past the value it just took, when
	// skipPending (skipValue).
	skipBuf     []byte
	skipPending bool
	branch      int // the branch of a PlanOr being scanned
	closed      bool
	// pf, when set, reads this shard ahead in a goroutine (scan_parallel.go); the fields
	// above then belong to pf's reader and stats is the consumer's view of its totals.
	pf *prefetch
	// rem, when set, reads another node's shard through its owner (remote.go).
	rem *remoteRead
	// db is the shard, eng the engine that opened the stream and views whether its shards
	// are a transaction's or a snapshot read's (which never yield). yielded: the stream gave
	// up its snapshot and iterators (scan_yield.go) and resumes at at, or at the
	// document there when resumeUnread. docUnread: the scan's iterator is at a document
	// not read yet (docValid: there is one), where a resume's seek left it.
	db           catalog.Shard
	eng          *Engine
	views        bool
	yielded      bool
	at           resumeAt
	resumeUnread bool
	docUnread    bool
	docValid     bool
	// applied is the shard's count of applied batches before the stream's snapshot
	// (counted: the shard keeps one), which a prefetching reader's yield compares.
	applied uint64
	counted bool
	// opened is when a scan opened, readPin its record in the catalog's yielding reads
	// from its first yield (scan_yield.go).
	opened  time.Time
	readPin *catalog.ReadPin
}

// NewShardStream prepares plan p's reads on shard s. Point reads go to the DB itself;
// scans read from a snapshot, which a cursor reading the present gives up between batches
// (Yield, scan_yield.go).
func (g *Engine) NewShardStream(ci *catalog.Coll, p *Plan, f *match.Filter, s int) (*ShardStream, error) {
	ss := new(ShardStream)
	if err := g.initShardStream(ss, ci, p, f, s); err != nil {
		return nil, err
	}
	return ss, nil
}

// initShardStream prepares ss, a zero stream, as NewShardStream's.
func (g *Engine) initShardStream(ss *ShardStream, ci *catalog.Coll, p *Plan, f *match.Filter, s int) error {
	*ss = ShardStream{ci: ci, p: p, f: f, Shard: s, meters: g.meters(ci), budgets: g.budgets(ci)}
	ss.Ranges, ss.parts = ss.rangesBuf[:0], ss.partsBuf[:0]
	for _, t := range p.targets {
		if ci.Map.Partition(t).Shard != s {
			continue
		}
		if p.spans != nil {
			lo, hi := ci.Map.Range(t)
			n := len(ss.Ranges)
			ss.Ranges = p.spanRanges(ss.Ranges, lo, hi)
			for range ss.Ranges[n:] {
				ss.parts = append(ss.parts, t)
			}
			continue
		}
		if p.hashes == nil {
			lo, hi := ci.Map.Range(t)
			ss.Ranges = append(ss.Ranges, [2]uint64{lo, hi})
			ss.parts = append(ss.parts, t)
			continue
		}
		lo, hi := ci.Map.Range(t)
		for _, h := range p.hashes {
			if store.InRange(h.hash, lo, hi) {
				ss.Ranges = append(ss.Ranges, [2]uint64{h.hash, h.hash + 1}) // hi 0 (wrapped) is the end
				ss.parts = append(ss.parts, t)
			}
		}
	}
	ss.Stats.Point = p.Kind == PlanIDs
	ss.exact = filterExact(ci, p, f)
	ss.keysOnly = p.KeysOnly && ss.exact
	ss.Stats.Partitions = countDistinct(ss.parts)
	db := g.shardList()[s]
	ss.db, ss.eng, ss.views = db, g, g.shards != nil
	if _, ok := db.Node(); ok && g.opts.Peers != nil {
		g.newRemoteRead(ss, p, f)
		ss.rem.spec.Linearizable = g.barrier != nil
		return nil
	}
	if g.barrier != nil {
		if err := g.barrier(db); err != nil {
			return err
		}
	}
	if p.Kind == PlanIDs {
		ss.r = db
		return nil
	}
	ss.opened = time.Now()
	ss.applied, ss.counted = appliedOf(db)
	snap, err := db.NewSnapshot()
	if err != nil {
		return catalog.StoreError(err)
	}
	ss.r, ss.snap = snap, snap
	return nil
}

// Prefetching reports whether the stream reads ahead in its own goroutine.
func (ss *ShardStream) Prefetching() bool { return ss.pf != nil }

// owns reports whether hash h is in one of the stream's partitions. NB: even when the
// stream reads every partition the shard owns, a shard may hold entries of ranges it does
// not own (a partition being copied to it, or the source range of a finished move until
// it is deleted), so the check is always made: a binary search over the sorted ranges.
func (ss *ShardStream) owns(h uint64) bool {
	rs := ss.Ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i][0] > h }) - 1
	return i >= 0 && store.InRange(h, rs[i][0], rs[i][1])
}

// Next implements stream.Stream.
func (ss *ShardStream) Next(ctx context.Context) (bsoncore.Document, error) {
	if ss.closed {
		return nil, nil
	}
	if ss.pf != nil {
		return ss.pf.Next(ctx, &ss.Stats)
	}
	if ss.limit > 0 && ss.Stats.Returned >= ss.limit {
		return nil, nil
	}
	return ss.read(ctx)
}

// SetLimit makes the stream end after n documents (n > 0), as a prefetching reader does:
// a limit that applies to each shard's output (Open's perShard).
func (ss *ShardStream) SetLimit(n int64) { ss.limit = n }

// read reads the next matching document through the plan's access path. The first read
// takes the stream's partitions' admission from their budgets (scan_meter.go).
func (ss *ShardStream) read(ctx context.Context) (bsoncore.Document, error) {
	if ss.rem != nil {
		return ss.readRemote(ctx)
	}
	if !ss.started {
		ss.started = true
		if err := ss.admit(ctx); err != nil {
			return nil, err
		}
	}
	if ss.yielded {
		if err := ss.reopen(); err != nil {
			return nil, err
		}
	}
	switch ss.p.Kind {
	case PlanScan:
		return ss.nextScan(ctx)
	case PlanIDs:
		return ss.nextID()
	case PlanIndex, PlanOr:
		return ss.nextIndex(ctx)
	}
	return nil, nil
}

// checkEvery is how many documents a scan reads between context checks.
const checkEvery = 256

// nextScan reads the partitions' documents in key order, or in reverse ({$natural: -1}).
func (ss *ShardStream) nextScan(ctx context.Context) (bsoncore.Document, error) {
	for {
		if ss.docIt == nil {
			if ss.pos >= len(ss.Ranges) {
				return nil, nil
			}
			if err := ss.openScanRange(); err != nil {
				return nil, err
			}
		}
		for ss.nextDoc() {
			doc := bsoncore.Document(ss.docIt.Doc())
			if ss.p.Text != nil { // a $text under an $or (planTextOr): scores what it matches
				var err error
				if doc, _, err = ss.textMatch(doc); err != nil {
					return nil, err
				}
			}
			if ok, err := ss.examine(doc); ok || err != nil {
				return doc, err
			}
			if ss.Stats.DocsExamined%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
		}
		err := ss.docIt.Err()
		_ = ss.docIt.Close()
		ss.docIt = nil
		if err != nil {
			return nil, catalog.StoreError(err)
		}
	}
}

// openScanRange opens the scan's iterator on range pos, and moves pos to the next.
func (ss *ShardStream) openScanRange() error {
	r := ss.Ranges[ss.pos]
	open := ss.r.NewDocIter
	if ss.p.Reverse { // {$natural: -1}: the last range first, each backwards
		r, open = ss.Ranges[len(ss.Ranges)-1-ss.pos], ss.r.NewDocIterReverse
	}
	ss.pos++
	it, err := open(ss.ci.Meta.ID, r[0], r[1])
	if err != nil {
		return catalog.StoreError(err)
	}
	ss.docIt = it
	return nil
}

// nextID reads the next _id of a point plan. Where the hash of an _id is not known (a
// collection sharded on another field), the _id index gives the hashes that hold it: _id is
// unique per logical partition, so several documents may share it.
func (ss *ShardStream) nextID() (bsoncore.Document, error) {
	ci := ss.ci
	for {
		t, hash, ok, err := ss.nextIDKey()
		if err != nil || !ok {
			return nil, err
		}
		if !ss.owns(hash) || ci.Map.Partition(ci.Map.Locate(hash)).Shard != ss.Shard {
			continue
		}
		doc, err := ss.fetch(hash, t.id)
		if err != nil {
			return nil, err
		}
		if doc == nil {
			continue
		}
		if ss.meters != nil {
			var lb [80]byte
			ss.meters.Record(ci.Map.Locate(hash), hash, ci.ShardKeyLabel(lb[:0], doc),
				shard.Cost{DocsRead: 1, BytesRead: int64(len(doc))}.RU())
		}
		if ok, err := ss.examine(doc); ok || err != nil {
			return doc, err
		}
	}
}

// nextIDKey returns the next document key of a point plan: the next _id with the hash the
// plan knows, or the next entry of the _id index for the current _id. The entries are read
// one at a time, as the stream needs them: a point read under a limit (findOne) stops at the
// first document, with no further step of the index iterator.
func (ss *ShardStream) nextIDKey() (t idTarget, hash uint64, ok bool, err error) {
	for {
		if len(ss.idHashes) > 0 {
			hash, ss.idHashes = ss.idHashes[0], ss.idHashes[1:]
			ss.Stats.KeysExamined++
			return ss.p.ids[ss.pos-1], hash, true, nil
		}
		if ss.idIt != nil {
			if ss.idIt.Next() {
				ss.idFound++
				ss.Stats.KeysExamined++
				return ss.p.ids[ss.pos-1], ss.idIt.Hash(), true, nil
			}
			if err := ss.closeIDIter(); err != nil {
				return t, 0, false, err
			}
			continue
		}
		if ss.pos >= len(ss.p.ids) {
			return t, 0, false, nil
		}
		t = ss.p.ids[ss.pos]
		ss.pos++
		if t.hashSet {
			return t, t.hash, true, nil
		}
		if lk, ok := ss.r.(idHashLookup); ok {
			ss.idHashes, err = lk.IDIndexHashes(ss.ci.Meta.ID, t.ixKey, ss.idHashBuf[:0])
			if err != nil {
				return t, 0, false, catalog.StoreError(err)
			}
			if len(ss.idHashes) == 0 {
				ss.Stats.KeysExamined++ // as closeIDIter counts an _id the index does not hold
			}
			continue
		}
		upper := store.AppendKeyPrefixEnd(ss.idEnd[:0], t.ixKey)
		it, err := ss.r.NewIndexIter(ss.ci.Meta.ID, ss.ci.Indexes[0].Meta.ID, t.ixKey, upper, false)
		if err != nil {
			return t, 0, false, catalog.StoreError(err)
		}
		ss.idIt, ss.idFound = it, 0
	}
}

// idHashLookup is a Reader that finds an _id's hashes without an iterator, from the store's
// cache of _id lookups (store.DB.IDIndexHashes): a shard's DB itself, read in its latest
// state as point plans read it, never a snapshot or a transaction's view.
type idHashLookup interface {
	IDIndexHashes(coll store.CollID, key []byte, dst []uint64) ([]uint64, error)
}

// closeIDIter closes the _id index iterator of nextIDKey. An _id the index does not hold
// still examined it once.
func (ss *ShardStream) closeIDIter() error {
	if ss.idFound == 0 {
		ss.Stats.KeysExamined++
	}
	err := ss.idIt.Err()
	if cerr := ss.idIt.Close(); err == nil {
		err = cerr
	}
	ss.idIt = nil
	return catalog.StoreError(err)
}

// fetch reads document (hash, id) into the stream's buffer; nil when it is gone (an index
// entry may outlive its document in the snapshot's view of a concurrent move).
func (ss *ShardStream) fetch(hash uint64, id []byte) (bsoncore.Document, error) {
	// A batch is in key order (scan_batch.go), and starts over from the smallest keys: its
	// fetches always seek, and never give up the iterator.
	if ss.p.Kind != PlanIDs && !ss.fetchGet && (ss.batch != nil || ss.fetchInOrder(hash, id)) {
		if doc, ok, err := ss.fetchExact(hash, id); ok || err != nil {
			return doc, err
		}
	}
	return ss.getDoc(hash, id)
}

// getDoc reads document (hash, id) by Get into the stream's buffer; nil when it is gone.
func (ss *ShardStream) getDoc(hash uint64, id []byte) (bsoncore.Document, error) {
	ss.takeBuf()
	doc, err := ss.r.GetDoc(ss.ci.Meta.ID, hash, id, ss.buf[:0])
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, catalog.StoreError(err)
	}
	ss.buf = doc
	return doc, nil
}

// exactSeeker is a DocIter that reads documents by key, asked in ascending order
// (store.DocIter.SeekExactAscending: it steps to a key a few documents ahead instead of
// seeking).
type exactSeeker interface {
	SeekExactAscending(hash uint64, id []byte) bool
}

// fetchInOrder reports whether document (hash, id) comes after the last one fetched, and
// when not, gives up the fetch iterator for good. An iterator reads documents in key order
// cheaply (each seek continues from the last one), but a seek elsewhere costs a search of
// every memtable and level, where a Get stops at the first that holds the key: an index whose
// order is not the documents' (readingTime in a collection sharded on deviceId) fetches by
// Get (BenchmarkAggWindow/Shards2).
func (ss *ShardStream) fetchInOrder(hash uint64, id []byte) bool {
	var h [8]byte
	binary.BigEndian.PutUint64(h[:], hash)
	if ss.fetchLast != nil {
		c := bytes.Compare(ss.fetchLast[:8], h[:])
		if c == 0 {
			c = bytes.Compare(ss.fetchLast[8:], id)
		}
		if c >= 0 {
			ss.fetchGet = true
			if ss.fetchIt != nil {
				_ = ss.fetchIt.Close()
				ss.fetchIt = nil
			}
			return false
		}
	}
	ss.fetchLast = append(append(ss.fetchLast[:0], h[:]...), id...)
	return true
}

// fetchExact reads document (hash, id) through the stream's fetch iterator, opened at the
// first call; ok is false when the reader's iterators cannot seek exactly (a transaction's
// overlay), and fetch then gets the document instead.
func (ss *ShardStream) fetchExact(hash uint64, id []byte) (doc bsoncore.Document, ok bool, err error) {
	if ss.fetchIt == nil {
		it, err := ss.r.NewDocIter(ss.ci.Meta.ID, 0, 0)
		if err != nil {
			return nil, false, catalog.StoreError(err)
		}
		ss.fetchIt = it
	}
	it, ok := ss.fetchIt.(exactSeeker)
	if !ok {
		return nil, false, nil
	}
	if !it.SeekExactAscending(hash, id) {
		return nil, true, catalog.StoreError(ss.fetchIt.Err())
	}
	v := ss.fetchIt.Doc()
	if v == nil {
		return nil, true, catalog.StoreError(ss.fetchIt.Err())
	}
	return v, true, nil // valid until the iterator's next move, at the stream's next Next
}

// examine counts doc as read and reports whether the filter matches it.
func (ss *ShardStream) examine(doc bsoncore.Document) (bool, error) {
	ss.Stats.DocsExamined++
	ss.Stats.BytesRead += int64(len(doc))
	ok, err := true, error(nil)
	if !ss.exact {
		ok, err = ss.f.MatchErr(doc)
	}
	if ok && err == nil {
		ss.Stats.Returned++
		ss.Stats.BytesReturned += int64(len(doc))
	}
	return ok, err
}

// Close implements stream.Stream.
func (ss *ShardStream) Close() {
	if ss.closed {
		return
	}
	ss.closed = true
	if ss.pf != nil {
		ss.Stats = ss.pf.stop()
		return
	}
	if ss.rem != nil {
		ss.rem.close()
	}
	ss.settle()
	if ss.docIt != nil {
		_ = ss.docIt.Close()
	}
	if ss.idxIt != nil {
		_ = ss.idxIt.Close()
	}
	if ss.idIt != nil {
		_ = ss.idIt.Close()
	}
	if ss.fetchIt != nil {
		_ = ss.fetchIt.Close()
	}
	if ss.batch != nil {
		ss.batch.release()
		ss.batch = nil
	}
	if ss.snap != nil {
		_ = ss.snap.Close()
	}
	if ss.readPin != nil {
		ss.eng.cat.Readers().Unpin(ss.readPin)
		ss.readPin = nil
	}
	ss.seen = nil
	ss.recycleBuf()
}

// Cost is the work the stream did, in the request-unit model's terms (shard.Cost): a point
// plan's documents are point reads, a scan's are examined and its results returned.
func (s *ScanStats) Cost() shard.Cost {
	if s.Point {
		return shard.Cost{DocsRead: s.DocsExamined, BytesRead: s.BytesRead, KeysExamined: s.KeysExamined}
	}
	return shard.Cost{DocsExamined: s.DocsExamined, KeysExamined: s.KeysExamined, BytesReturned: s.BytesReturned}
}

// Charge is the request units of the stream's reads: its Cost (at least shard.MinRU), plus
// shard.MinRU for each further partition it read (the fan-out's per-partition cost).
func (s *ScanStats) Charge() float64 {
	return s.Cost().RU() + shard.MinRU*float64(max(s.Partitions-1, 0))
}
