package exec

import (
	"github.com/cleavedb/cleave/exec/catalog"

	"context"
	"encoding/binary"
	"errors"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// scanStats counts what a shard's part of a query read, for explain and request units.
type scanStats struct {
	docsExamined int64
	keysExamined int64
	bytesRead    int64
	returned     int64
}

// shardStream runs a plan on one shard: it reads documents through the plan's access path
// from a consistent snapshot and yields those the filter matches.
type shardStream struct {
	r      catalog.Reader
	snap   catalog.Snapshot // closed with the stream; nil when r is the DB itself
	ci     *catalog.Coll
	p      *plan
	f      *match.Filter
	shard  int
	ranges [][2]uint64 // hash ranges of the targeted partitions this shard owns
	all    bool        // the ranges are every partition the shard owns
	stats  scanStats
	// meters are the collection's partition meters, charged with the reads (shard_state.go);
	// nil when nothing is metered.
	meters *shard.Meters

	pos    int // next partition (scan), range (index) or id (ids)
	docIt  catalog.DocIter
	idxIt  catalog.IndexIter
	seen   map[string]struct{}
	buf    []byte
	key    []byte // scratch for seen keys
	closed bool
	// pf, when set, reads this shard ahead in a goroutine (scan_parallel.go); the fields
	// above then belong to pf's reader and stats is the consumer's view of its totals.
	pf *prefetch
}

// newShardStream prepares plan p's reads on shard s. Point reads go to the DB itself;
// scans read from a snapshot so that a cursor sees one state across getMores.
func (e *Executor) newShardStream(ci *catalog.Coll, p *plan, f *match.Filter, s int) (*shardStream, error) {
	ss := &shardStream{ci: ci, p: p, f: f, shard: s, meters: e.readMeters(ci)}
	owned := 0
	for i := 0; i < ci.Map.Len(); i++ {
		if ci.Map.Partition(i).Shard == s {
			owned++
		}
	}
	for _, t := range p.targets {
		if ci.Map.Partition(t).Shard != s {
			continue
		}
		lo, hi := ci.Map.Range(t)
		ss.ranges = append(ss.ranges, [2]uint64{lo, hi})
	}
	ss.all = len(ss.ranges) == owned
	db := e.st.Shards[s]
	if p.kind == planIDs {
		ss.r = db
		return ss, nil
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		return nil, catalog.StoreError(err)
	}
	ss.r, ss.snap = snap, snap
	return ss, nil
}

// owns reports whether hash h is in one of the stream's partitions. NB: even when the
// stream reads every partition the shard owns, a shard may hold entries of ranges it does
// not own (a partition being copied to it, or the source range of a finished move until
// it is deleted), so the check is always made: a binary search over the sorted ranges.
func (ss *shardStream) owns(h uint64) bool {
	rs := ss.ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i][0] > h }) - 1
	return i >= 0 && store.InRange(h, rs[i][0], rs[i][1])
}

// Next implements stream.Stream.
func (ss *shardStream) Next(ctx context.Context) (bsoncore.Document, error) {
	if ss.closed {
		return nil, nil
	}
	if ss.pf != nil {
		return ss.pf.Next(ctx, &ss.stats)
	}
	return ss.read(ctx)
}

// read reads the next matching document through the plan's access path.
func (ss *shardStream) read(ctx context.Context) (bsoncore.Document, error) {
	switch ss.p.kind {
	case planScan:
		return ss.nextScan(ctx)
	case planIDs:
		return ss.nextID()
	case planIndex:
		return ss.nextIndex(ctx)
	}
	return nil, nil
}

// checkEvery is how many documents a scan reads between context checks.
const checkEvery = 256

// nextScan reads the partitions' documents in key order.
func (ss *shardStream) nextScan(ctx context.Context) (bsoncore.Document, error) {
	for {
		if ss.docIt == nil {
			if ss.pos >= len(ss.ranges) {
				return nil, nil
			}
			r := ss.ranges[ss.pos]
			ss.pos++
			it, err := ss.r.NewDocIter(ss.ci.Meta.ID, r[0], r[1])
			if err != nil {
				return nil, catalog.StoreError(err)
			}
			ss.docIt = it
		}
		for ss.docIt.Next() {
			doc := bsoncore.Document(ss.docIt.Doc())
			if ok, err := ss.examine(doc); ok || err != nil {
				return doc, err
			}
			if ss.stats.docsExamined%checkEvery == 0 {
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

// nextID reads the next _id of a point plan.
func (ss *shardStream) nextID() (bsoncore.Document, error) {
	ci := ss.ci
	for ss.pos < len(ss.p.ids) {
		t := ss.p.ids[ss.pos]
		ss.pos++
		hash := t.hash
		if !t.hashSet {
			ss.stats.keysExamined++
			h, _, found, err := ss.r.HasIndexKeyPrefix(ci.Meta.ID, ci.Indexes[0].Meta.ID, t.id)
			if err != nil {
				return nil, catalog.StoreError(err)
			}
			if !found {
				continue
			}
			hash = h
		}
		if !ss.owns(hash) || ci.Map.Partition(ci.Map.Locate(hash)).Shard != ss.shard {
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
			ss.meters.Record(ci.Map.Locate(hash), hash, nil, shard.Cost{DocsRead: 1, BytesRead: int64(len(doc))}.RU())
		}
		if ok, err := ss.examine(doc); ok || err != nil {
			return doc, err
		}
	}
	return nil, nil
}

// nextIndex walks the plan's index ranges and fetches each entry's document once.
func (ss *shardStream) nextIndex(ctx context.Context) (bsoncore.Document, error) {
	ci := ss.ci
	for {
		if ss.idxIt == nil {
			if ss.pos >= len(ss.p.ranges) {
				return nil, nil
			}
			r := ss.p.ranges[ss.pos]
			if ss.p.reverse {
				r = ss.p.ranges[len(ss.p.ranges)-1-ss.pos]
			}
			ss.pos++
			it, err := ss.r.NewIndexIter(ci.Meta.ID, ss.p.index.Meta.ID, r.lo, r.hi, ss.p.reverse)
			if err != nil {
				return nil, catalog.StoreError(err)
			}
			ss.idxIt = it
		}
		for ss.idxIt.Next() {
			ss.stats.keysExamined++
			if ss.stats.keysExamined%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			hash, id := ss.idxIt.Hash(), ss.idxIt.ID()
			if !ss.owns(hash) {
				continue
			}
			if !ss.p.index.Unique || len(ss.p.ranges) > 1 || ss.ci.TS != nil {
				if ss.seen == nil {
					ss.seen = map[string]struct{}{}
				}
				// A document is (hash, _id): time-series measurements share _ids.
				ss.key = append(binary.BigEndian.AppendUint64(ss.key[:0], hash), id...)
				k := string(ss.key)
				if _, dup := ss.seen[k]; dup {
					continue
				}
				ss.seen[k] = struct{}{}
			}
			doc, err := ss.fetch(hash, id)
			if err != nil {
				return nil, err
			}
			if doc == nil {
				continue
			}
			if ok, err := ss.examine(doc); ok || err != nil {
				return doc, err
			}
		}
		err := ss.idxIt.Err()
		_ = ss.idxIt.Close()
		ss.idxIt = nil
		if err != nil {
			return nil, catalog.StoreError(err)
		}
	}
}

// fetch reads document (hash, id) into the stream's buffer; nil when it is gone (an index
// entry may outlive its document in the snapshot's view of a concurrent move).
func (ss *shardStream) fetch(hash uint64, id []byte) (bsoncore.Document, error) {
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

// examine counts doc as read and reports whether the filter matches it.
func (ss *shardStream) examine(doc bsoncore.Document) (bool, error) {
	ss.stats.docsExamined++
	ss.stats.bytesRead += int64(len(doc))
	ok, err := ss.f.MatchErr(doc)
	if ok && err == nil {
		ss.stats.returned++
	}
	return ok, err
}

// Close implements stream.Stream.
func (ss *shardStream) Close() {
	if ss.closed {
		return
	}
	ss.closed = true
	if ss.pf != nil {
		ss.stats = ss.pf.stop()
		return
	}
	ss.meterScan()
	if ss.docIt != nil {
		_ = ss.docIt.Close()
	}
	if ss.idxIt != nil {
		_ = ss.idxIt.Close()
	}
	if ss.snap != nil {
		_ = ss.snap.Close()
	}
	ss.seen = nil
}
