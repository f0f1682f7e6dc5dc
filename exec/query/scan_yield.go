package query

import (
	"bytes"
	"encoding/binary"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A cursor that reads the present yields its shard streams between batches
// (stream.Yielder): a stream closes its iterators and its snapshot and keeps where it stands
// (resumeAt); its next read takes a new snapshot and seeks just past that position (or to it,
// when its last document is to be read again), so that it returns what the shard holds now:
// a document deleted meanwhile is gone, a changed one comes as it is now, and a document
// moved within an index (an indexed field changed) may be met twice or missed, as in
// MongoDB. A stream opened on a transaction's or a snapshot read's views never yields.
//
// What a stream can resume: a forward collection scan (its position is the document's key,
// hash then _id) and an index scan or $or (the entry's raw position, key | hash | _id, the
// document key included, so that entries of equal keys resume exactly). A reverse
// collection scan ({$natural: -1}), a point plan with an _id index walk in progress, a
// batched fetch (Query.Unordered) and a distinct scan keep their snapshot; so does a
// prefetching reader whose plan may meet a document twice (it would have to forget the
// documents it read ahead and did not hand over). A partition moved to another shard while
// the stream was yielded fails its next read with QueryPlanKilled (175): its documents on
// this shard are deleted after the move's grace period.

// resumeAt is where a yielded stream resumes: the $or branch, the range (as pos counts
// them) that holds its last document, and that document's position in it (a scan: hash
// then _id; an index: the entry's Pos). A nil key resumes at the start of range rng.
type resumeAt struct {
	branch, rng int
	key         []byte
}

// positioner is an index iterator that tells its raw position (store.IndexIter.Pos) and
// seeks past one (SeekAfter).
type positioner interface {
	Pos() []byte
	Seek(pos []byte) bool
	SeekAfter(pos []byte) bool
}

// yieldable reports whether the stream's plan and reader let it yield, whatever it has
// read (see above).
func (ss *ShardStream) yieldable() bool {
	if ss.views || ss.rem != nil || ss.batch != nil || ss.p.DistinctScan {
		return false
	}
	switch ss.p.Kind {
	case PlanScan:
		return !ss.p.Reverse
	case PlanIndex, PlanOr, PlanIDs:
		return true
	}
	return false
}

// mayMeetTwice reports whether the plan may meet a document more than once (the duplicates
// nextEntry drops through seen).
func (ss *ShardStream) mayMeetTwice() bool {
	switch ss.p.Kind {
	case PlanOr:
		return true
	case PlanIndex:
		return !ss.p.Index.OneEntryPerDoc() || len(ss.p.Ranges) > 1 || ss.ci.TS != nil
	}
	return false
}

// Yield implements stream.Yielder.
func (ss *ShardStream) Yield(unread bool) bool {
	switch {
	case ss.closed:
		return !unread
	case ss.pf != nil:
		return ss.pf.yield(unread)
	case ss.yielded: // nothing read since the last yield
		return !unread
	case !ss.yieldable():
		return false
	case ss.p.Kind == PlanIDs:
		// Point reads go to the DB itself, which is the present; an _id index walk holds
		// an iterator until its _id is done.
		return ss.idIt == nil && !unread
	}
	at, ok := ss.lastAt(ss.at.key[:0])
	if !ok {
		return false
	}
	if unread && ss.idxIt != nil && ss.seen != nil {
		ss.key = append(binary.BigEndian.AppendUint64(ss.key[:0], ss.idxIt.Hash()), ss.idxIt.ID()...)
		delete(ss.seen, string(ss.key))
	}
	if unread {
		ss.Stats.Returned--
	}
	ss.releaseView()
	ss.at, ss.resumeUnread, ss.yielded = at, unread, true
	return true
}

// lastAt returns the position of the document the stream returned last, its key appended
// to dst; ok is false when its iterator cannot tell it.
func (ss *ShardStream) lastAt(dst []byte) (resumeAt, bool) {
	switch {
	case ss.docIt != nil:
		key := binary.BigEndian.AppendUint64(dst, ss.docIt.Hash())
		return resumeAt{rng: ss.pos - 1, key: append(key, ss.docIt.ID()...)}, true
	case ss.idxIt != nil:
		it, ok := ss.idxIt.(positioner)
		if !ok {
			return resumeAt{}, false
		}
		return resumeAt{branch: ss.branch, rng: ss.pos - 1, key: append(dst, it.Pos()...)}, true
	}
	return resumeAt{branch: ss.branch, rng: ss.pos}, true
}

// releaseView closes the stream's iterators and snapshot.
func (ss *ShardStream) releaseView() {
	for _, it := range []interface{ Close() error }{ss.docIt, ss.idxIt, ss.fetchIt} {
		if it != nil {
			_ = it.Close()
		}
	}
	ss.docIt, ss.idxIt, ss.fetchIt, ss.unread, ss.docUnread = nil, nil, nil, false, false
	if ss.snap != nil {
		_ = ss.snap.Close()
		ss.snap, ss.r = nil, nil
	}
}

// reopen takes a new snapshot of a yielded stream's shard and positions the stream where
// it yielded.
func (ss *ShardStream) reopen() error {
	ss.yielded = false
	if err := ss.checkOwned(); err != nil {
		return err
	}
	ss.applied, ss.counted = appliedOf(ss.db)
	snap, err := ss.db.NewSnapshot()
	if err != nil {
		return catalog.StoreError(err)
	}
	ss.r, ss.snap = snap, snap
	at := ss.at
	ss.branch, ss.pos = at.branch, at.rng
	if at.key == nil {
		return nil
	}
	if ss.p.Kind == PlanScan {
		if err := ss.openScanRange(); err != nil {
			return err
		}
		hash, id := binary.BigEndian.Uint64(at.key), at.key[8:]
		ss.docValid = ss.docIt.SeekGE(hash, id)
		// At the document returned last, the scan's next step moves past it; anywhere else
		// (it is gone, or is to be read again) the scan reads where the seek stopped.
		ss.docUnread = !ss.docValid || ss.resumeUnread || ss.docIt.Hash() != hash || !bytes.Equal(ss.docIt.ID(), id)
		return catalog.StoreError(ss.docIt.Err())
	}
	if err := ss.openIndexRange(ss.indexScan()); err != nil {
		return err
	}
	it := ss.idxIt.(positioner) // yieldable: the iterator of a shard's snapshot
	if ss.resumeUnread {
		ss.unread = it.Seek(at.key)
	} else {
		ss.unread = it.SeekAfter(at.key)
	}
	return catalog.StoreError(ss.idxIt.Err())
}

// checkOwned fails once a range the stream reads belongs to a partition on another shard:
// a move while the stream was yielded (its documents here are deleted after a grace period).
func (ss *ShardStream) checkOwned() error {
	if ss.eng == nil || ss.eng.cat == nil {
		return nil
	}
	cur := ss.eng.cat.Refresh(ss.ci)
	if cur == ss.ci {
		return nil
	}
	m := cur.Map
	for _, r := range ss.Ranges {
		for t := m.Locate(r[0]); t < m.Len(); t++ {
			lo, hi := m.Range(t)
			if r[1] != 0 && lo >= r[1] {
				break
			}
			if m.Partition(t).Shard != ss.Shard {
				return mongoerr.New(mongoerr.QueryPlanKilled,
					"a partition of %s the cursor reads moved to another shard while it was idle", ss.ci.NS())
			}
			if hi == 0 {
				break
			}
		}
	}
	return nil
}

// nextDoc moves the scan's iterator to its next document, or, after a resume, reports the
// one its seek found.
func (ss *ShardStream) nextDoc() bool {
	if ss.docUnread {
		ss.docUnread = false
		return ss.docValid
	}
	return ss.docIt.Next()
}
