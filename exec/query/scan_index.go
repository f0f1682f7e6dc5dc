package query

import (
	"context"
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
)

// An index plan's read on one shard: the walk of its key ranges (or of its $or branches'),
// the key check, the seeks past the keys it refuses and past a distinct scan's value, the
// duplicates of multikey entries, and whether the entries are the answer (filterExact).

// filterExact reports whether the documents plan p reads within its index bounds, whose
// entries its key check passes, all match f, so that the stream need not evaluate f on them:
// f is empty, or constrains only fields of an ordered index without a collation that have
// never held an array, in ways their bounds express exactly (match.Filter.BoundsExact: a
// $match of a readingTime window, evaluated on every document fetched, was 13% of agg's CPU
// on 2 shards). The ranges express the bounds of the fields they fix (indexBounds) and the
// key check those of the others (newKeyCheck). Clipping the bounds (min, max) or restricting
// the hashes keeps them exact; the plan is made again when the index turns multikey before
// the read (planAndRead).
//
// An $or plan is exact when the filter is the $or alone and each branch is exact on the
// index it scans: an entry a branch's bounds hold matches that branch, so the $or.
func filterExact(ci *catalog.Coll, p *Plan, f *match.Filter) bool {
	if p.Text != nil { // the search decides, on the document
		return false
	}
	if p.Kind == PlanOr {
		branches := f.OrBranches()
		if !f.IsOr() || len(branches) != len(p.Branches) || ci.TS != nil {
			return false
		}
		for i, b := range p.Branches {
			if !indexExact(b.Index, branches[i]) {
				return false
			}
		}
		return true
	}
	if p.Kind != PlanIndex || p.Wildcard != nil || ci.TS != nil {
		return false
	}
	return indexExact(p.Index, f)
}

// indexExact reports whether every entry that index xi's bounds for f hold (ranges and key
// check) is a match of f.
func indexExact(xi *catalog.Index, f *match.Filter) bool {
	if xi == nil || xi.Geo != nil || xi.Wildcard != nil || xi.Collation != nil || len(xi.Fields) == 0 {
		return false
	}
	if f.IsEmpty() { // every entry is a match
		return true
	}
	var buf [8]string
	paths := buf[:0]
	for i, fld := range xi.Fields {
		if !fld.Hashed && !xi.IsMultikey(i) {
			paths = append(paths, fld.Path)
		}
	}
	return f.BoundsExact(paths...)
}

// nextIndex walks the plan's index ranges and fetches each entry's document once, in the
// index's order, or, for a caller that does not need it (Query.Unordered), in the documents'
// key order a batch at a time (scan_batch.go). A keys-only plan yields {} for each entry
// instead, reading no document.
func (ss *ShardStream) nextIndex(ctx context.Context) (bsoncore.Document, error) {
	next := ss.nextEntry
	if ss.batch != nil {
		next = ss.nextSorted
	}
	for {
		hash, id, ok, err := next(ctx)
		if !ok || err != nil {
			return nil, err
		}
		if ss.keysOnly {
			ss.Stats.Returned++
			return EmptyDoc, nil
		}
		doc, err := ss.fetch(hash, id)
		if err != nil {
			return nil, err
		}
		if doc == nil {
			continue
		}
		if ss.p.Text != nil {
			var ok bool
			if doc, ok, err = ss.textMatch(doc); !ok || err != nil {
				ss.Stats.DocsExamined++
				if err != nil {
					return nil, err
				}
				continue
			}
		}
		if ok, err := ss.examine(doc); ok || err != nil {
			return doc, err
		}
	}
}

// nextEntry walks the plan's index ranges to the next entry whose document the stream reads:
// one of its partitions', the first entry of that document. id is valid until the next call;
// ok is false at the end.
func (ss *ShardStream) nextEntry(ctx context.Context) (hash uint64, id []byte, ok bool, err error) {
	for {
		scan := ss.indexScan()
		if ss.idxIt == nil {
			if ss.pos >= len(scan.Ranges) {
				if ss.p.Kind != PlanOr || ss.branch+1 >= len(ss.p.Branches) {
					return 0, nil, false, nil
				}
				ss.branch, ss.pos = ss.branch+1, 0
				continue
			}
			if err := ss.openIndexRange(scan); err != nil {
				return 0, nil, false, err
			}
		}
		for more := ss.resume(); more; more = ss.advance() {
			ss.Stats.KeysExamined++
			if ss.Stats.KeysExamined%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return 0, nil, false, err
				}
			}
			hash, id := ss.idxIt.Hash(), ss.idxIt.ID()
			if !ss.owns(hash) {
				continue
			}
			// Before the duplicates: another entry of the same document may pass.
			if kc := scan.keyCheck; kc != nil && ss.keyRefused(kc) {
				if s, ok := ss.idxIt.(seeker); ok {
					if ss.seekBuf = kc.skip(ss.seekBuf[:0], ss.idxIt.Key(), ss.p.Reverse); ss.seekBuf != nil {
						if !s.Seek(ss.seekBuf) {
							break
						}
						ss.unread = true
					}
				}
				continue
			}
			// An index that holds one entry per document, read over one range, meets each
			// once; others meet a document once per element of an array (a multikey index,
			// unique or not) or once per range that holds one of its keys, and an $or plan
			// once per branch that holds it.
			if !scan.Index.OneEntryPerDoc() || len(scan.Ranges) > 1 || ss.ci.TS != nil || ss.p.Kind == PlanOr {
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
			if ss.p.DistinctScan {
				ss.skipValue(ss.idxIt.Key(), scan.Index.Fields[:ss.p.DistinctField+1], ss.p.Reverse)
			}
			return hash, id, true, nil
		}
		err := ss.idxIt.Err()
		_ = ss.idxIt.Close()
		ss.idxIt, ss.skipPending = nil, false
		if err != nil {
			return 0, nil, false, catalog.StoreError(err)
		}
	}
}

// openIndexRange opens the index iterator on range pos of scan, and moves pos to the next.
func (ss *ShardStream) openIndexRange(scan IndexScan) error {
	r := scan.Ranges[ss.pos]
	if ss.p.Reverse {
		r = scan.Ranges[len(scan.Ranges)-1-ss.pos]
	}
	ss.pos++
	it, err := ss.r.NewIndexIter(ss.ci.Meta.ID, scan.Index.Meta.ID, r.lo, r.hi, ss.p.Reverse)
	if err != nil {
		return catalog.StoreError(err)
	}
	ss.idxIt = it
	return nil
}

// resume moves the index iterator to the next entry to read: past the value a distinct scan
// just took (skipValue), or as advance does.
func (ss *ShardStream) resume() bool {
	if ss.skipPending {
		ss.skipPending = false
		if s, ok := ss.idxIt.(seeker); ok {
			return s.Seek(ss.skipBuf)
		}
	}
	return ss.advance()
}

// keyRefused reports whether key check kc refuses the index iterator's entry. A key the check
// cannot measure makes the stream evaluate the filter from then on, exact or not.
func (ss *ShardStream) keyRefused(kc *keyCheck) bool {
	ok, sure := kc.accepts(ss.idxIt.Key())
	if !sure {
		ss.exact, ss.keysOnly = false, false
	}
	return !ok
}

// indexScan returns the index scan the stream is in: the plan's, or its current branch's.
func (ss *ShardStream) indexScan() IndexScan {
	if ss.p.Kind == PlanOr {
		return ss.p.Branches[ss.branch]
	}
	return IndexScan{Index: ss.p.Index, Ranges: ss.p.Ranges, keyCheck: ss.p.keyCheck}
}

// seeker is an index iterator that can jump ahead (store.IndexIter's Seek: forward, to the
// first entry at or past a key; in reverse, to the last entry before it).
type seeker interface{ Seek(pos []byte) bool }

// advance moves the index iterator to its next entry, unless a seek has just placed it on one
// that is not read yet.
func (ss *ShardStream) advance() bool {
	if ss.unread {
		ss.unread = false
		return true
	}
	return ss.idxIt.Next()
}
