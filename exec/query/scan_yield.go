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
// the stream was yielded stays readable on this shard as of the move (its documents here are
// kept while the stream is open, catalog.Readers), as a MongoDB cursor reads a migrated
// range on the donor shard; a remote stream's owner answers StaleConfig (13388) instead.

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
	if ss.views || ss.batch != nil || ss.p.DistinctScan {
		return false
	}
	if ss.rem != nil && (ss.rem.unpositioned || ss.mayMeetTwice()) {
		return false // the owner's stream would forget the documents it met
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
	ss.pin()
	ss.releaseView()
	ss.at, ss.resumeUnread, ss.yielded = at, unread, true
	return true
}

// lastAt returns the position of the document the stream returned last, its key appended
// to dst; ok is false when its iterator cannot tell it.
func (ss *ShardStream) lastAt(dst []byte) (resumeAt, bool) {
	switch {
	case ss.rem != nil:
		if ss.rem.lastPos == nil {
			return resumeAt{}, true
		}
		at, ok := decodePos(ss.rem.lastPos)
		at.key = append(dst, at.key...)
		return at, ok
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

// releaseView closes the stream's iterators and snapshot, or ends its remote read.
func (ss *ShardStream) releaseView() {
	if ss.rem != nil {
		ss.rem.close()
		ss.rem.pos, ss.rem.last = nil, false
		return
	}
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

// pin records the stream in the catalog's yielding reads at its first yield, so that a
// partition moved away from its shard keeps its documents there while the stream may resume
// on them (catalog.Readers). Close unpins it.
func (ss *ShardStream) pin() {
	if ss.readPin == nil && ss.eng != nil && ss.eng.cat != nil && ss.rem == nil {
		ss.readPin = ss.eng.cat.Readers().Pin(ss.ci.Meta.ID, ss.Shard, ss.opened)
	}
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

// AppendPos appends the position of the document the stream returned last, for the router
// that reads this shard (remoteBatch.Pos); ok is false when the stream cannot tell it (it
// cannot yield).
func (ss *ShardStream) AppendPos(dst []byte) ([]byte, bool) {
	if !ss.yieldable() || ss.pf != nil || ss.p.Kind == PlanIDs {
		return dst, false
	}
	at, ok := ss.lastAt(nil)
	if !ok {
		return dst, false
	}
	return appendPos(dst, at), true
}

// ResumeFrom makes a stream that has not read yet start after position pos (AppendPos), or
// at it when unread: the owner's side of a yielded remote read (RemoteScanSpec.Resume).
func (ss *ShardStream) ResumeFrom(pos []byte, unread bool) error {
	at, ok := decodePos(pos)
	if !ok || posLen(pos) != len(pos) || !ss.yieldable() || ss.p.Kind == PlanIDs || ss.rem != nil || !ss.validAt(at) {
		return mongoerr.New(mongoerr.BadValue, "cannot resume the shard's read at the position given")
	}
	ss.releaseView()
	ss.at, ss.resumeUnread, ss.yielded = at, unread, true
	return nil
}

// validAt reports whether at is a position in the stream's plan.
func (ss *ShardStream) validAt(at resumeAt) bool {
	n := len(ss.Ranges)
	if ss.p.Kind != PlanScan {
		if ss.p.Kind == PlanOr && at.branch >= len(ss.p.Branches) || ss.p.Kind != PlanOr && at.branch != 0 {
			return false
		}
		ss.branch = at.branch
		n = len(ss.indexScan().Ranges)
	}
	return at.rng < n || at.key == nil && at.rng == n
}

// appendPos appends at's encoding: the branch, the range, and the key's length plus one (0:
// no key), as uvarints, then the key.
func appendPos(dst []byte, at resumeAt) []byte {
	dst = binary.AppendUvarint(dst, uint64(at.branch))
	dst = binary.AppendUvarint(dst, uint64(at.rng))
	if at.key == nil {
		return binary.AppendUvarint(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(at.key))+1)
	return append(dst, at.key...)
}

// decodePos decodes the position src starts with (its key points into src).
func decodePos(src []byte) (resumeAt, bool) {
	var at resumeAt
	var v [3]uint64
	for i := range v {
		n := 0
		v[i], n = binary.Uvarint(src)
		if n <= 0 || v[i] > 1<<31 {
			return at, false
		}
		src = src[n:]
	}
	at.branch, at.rng = int(v[0]), int(v[1])
	if v[2] > 0 {
		if uint64(len(src)) < v[2]-1 {
			return at, false
		}
		at.key = src[: v[2]-1 : v[2]-1]
	}
	if at.key != nil && len(at.key) < 8 {
		return at, false // a scan's key holds a hash, an index position more
	}
	return at, true
}

// posLen returns the length of the position src starts with, 0 when it is malformed.
func posLen(src []byte) int {
	n := 0
	for i := range 3 {
		v, k := binary.Uvarint(src[n:])
		if k <= 0 {
			return 0
		}
		n += k
		if i == 2 && v > 0 {
			if uint64(len(src)-n) < v-1 {
				return 0
			}
			n += int(v - 1)
		}
	}
	return n
}
