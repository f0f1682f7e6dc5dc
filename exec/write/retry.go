package write

import (
	"errors"
	"slices"
	"sort"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// Retryable writes. A write that carries lsid and txnNumber is applied at most once: what it
// did is recorded per statement in a transaction record of the session (store's 't' keys,
// MongoDB's config.transactions), in the same atomic batch as the statement's document
// writes, so a retry after a lost reply, a reconnect or a restart finds it and answers the
// original result instead of applying the statement again. A command's writes may reach
// several shards: each shard's batch carries the record of the statements staged in it (plus
// all those committed before), and LoadRetry reads the union of the shards' records.
//
// A Retry is used by one command at a time: the caller checks its session out for the
// duration of the command.

// StmtResult is what a retryable write recorded of one statement it executed: enough to
// answer a retry as the first execution was answered.
type StmtResult struct {
	Stmt int32
	// Matched is the documents inserted, matched (updated or not) or deleted.
	Matched  int64
	Modified int64
	// Upserted is the _id of the document an upsert inserted; Type 0 when none.
	Upserted bsoncore.Value
	// Before and After are findAndModify's images of the document written.
	Before, After bsoncore.Document
}

// plain reports whether r is {matched: 1} and nothing else (an insert or a delete): such
// statements are recorded as ranges of statement ids, so that a large insert keeps a small
// record.
func (r *StmtResult) plain() bool {
	return r.Matched == 1 && r.Modified == 0 && r.Upserted.Type == 0 && r.Before == nil && r.After == nil
}

// Result returns the statement's outcome in the shape Path.Run reports it.
func (r *StmtResult) Result() Result {
	return Result{Matched: r.Matched, Modified: r.Modified, Upserted: r.Upserted, Before: r.Before, After: r.After}
}

// stmtRange is the statement ids [lo, hi] (inclusive) of plain results.
type stmtRange struct{ lo, hi int32 }

// pendingStmt is a statement result staged in a Writer's batches, not committed yet.
type pendingStmt struct {
	res    StmtResult
	shards []int // the shards whose batches hold its writes; none for a no-op
}

// Retry is the retryable-write state of one session: its current txnNumber and the
// statements of it already executed.
type Retry struct {
	lsid      []byte
	txnNumber int64
	plain     []stmtRange // sorted, disjoint, not adjacent
	rich      map[int32]StmtResult
	pending   []pendingStmt
	// stale is set when a commit failed on some shard: what was recorded is in the store
	// only, and the state must be loaded again (LoadRetry).
	stale bool
	// committedTxn is set when txnNumber was a multi-document transaction that committed:
	// a retried commitTransaction answers ok.
	committedTxn bool
	// gen is the generation of the node's record merges (catalog.RecordGate) the state knows
	// of: a writer reads the stored records of the state's shards first when merges ended since.
	gen int64
}

// NewRetry returns the state of a session (lsid: its 16-byte UUID) starting txnNumber, with
// nothing executed.
func NewRetry(lsid []byte, txnNumber int64) *Retry {
	return &Retry{lsid: slices.Clone(lsid), txnNumber: txnNumber}
}

// Renew makes rt the state of its session's retryable write txnNumber, newer than rt's, with
// nothing executed: as NewRetry, but it keeps rt's buffers, so that a session's successive
// insertMany calls (a driver gives each its own txnNumber) do not grow a new list of pending
// statements each (a fifth of the bytes an insertMany of 100 documents allocated).
func (rt *Retry) Renew(txnNumber int64) {
	clear(rt.pending[:cap(rt.pending)]) // the findAndModify images the entries held
	clear(rt.rich)
	*rt = Retry{lsid: rt.lsid, txnNumber: txnNumber, plain: rt.plain[:0], rich: rt.rich, pending: rt.pending[:0], gen: rt.gen}
}

// Stale reports whether the state must be loaded from the store again before it is used.
func (rt *Retry) Stale() bool { return rt.stale }

// TxnCommitted reports whether txnNumber was a multi-document transaction that committed.
func (rt *Retry) TxnCommitted() bool { return rt.committedTxn }

// CommittedTxnRecord returns the record of a committed multi-document transaction
// txnNumber of session lsid, to write with the transaction's batch.
func CommittedTxnRecord(lsid []byte, txnNumber int64) (*Retry, []byte) {
	rt := NewRetry(lsid, txnNumber)
	rt.committedTxn = true
	return rt, rt.encode(0)
}

// RecordLastWrite returns when transaction record rec was written; ok is false for a record
// written before records carried the time.
func RecordLastWrite(rec []byte) (t time.Time, ok bool) {
	ms, ok := bsoncore.Document(rec).Lookup("lastWriteDate").DateTimeOK()
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// TxnNumber returns the transaction number the state is about.
func (rt *Retry) TxnNumber() int64 { return rt.txnNumber }

// Executed returns the recorded result of statement stmt, if it was executed.
func (rt *Retry) Executed(stmt int32) (StmtResult, bool) {
	if r, ok := rt.rich[stmt]; ok {
		return r, true
	}
	i := sort.Search(len(rt.plain), func(i int) bool { return rt.plain[i].hi >= stmt })
	if i < len(rt.plain) && rt.plain[i].lo <= stmt {
		return StmtResult{Stmt: stmt, Matched: 1}, true
	}
	return StmtResult{}, false
}

// add records r as executed.
func (rt *Retry) add(r StmtResult) {
	if r.plain() {
		rt.plain = addStmt(rt.plain, r.Stmt)
		return
	}
	if rt.rich == nil {
		rt.rich = map[int32]StmtResult{}
	}
	rt.rich[r.Stmt] = r
}

// addStmt adds stmt to the sorted ranges rs, merging neighbours.
func addStmt(rs []stmtRange, stmt int32) []stmtRange {
	if n := len(rs); n > 0 && rs[n-1].hi+1 == stmt { // the usual case: ids in order
		rs[n-1].hi = stmt
		return rs
	}
	i := sort.Search(len(rs), func(i int) bool { return rs[i].hi+1 >= stmt })
	switch {
	case i < len(rs) && rs[i].lo <= stmt && stmt <= rs[i].hi:
		return rs
	case i < len(rs) && rs[i].hi+1 == stmt:
		rs[i].hi = stmt
		if i+1 < len(rs) && rs[i+1].lo == stmt+1 {
			rs[i].hi = rs[i+1].hi
			rs = slices.Delete(rs, i+1, i+2)
		}
		return rs
	case i < len(rs) && rs[i].lo == stmt+1:
		rs[i].lo = stmt
		return rs
	}
	return slices.Insert(rs, i, stmtRange{stmt, stmt})
}

// commitPending records the pending statements as executed, once their batches committed.
func (rt *Retry) commitPending() {
	for _, p := range rt.pending {
		rt.add(p.res)
	}
	rt.pending = rt.pending[:0]
}

// encode returns the record of shard s: every statement committed before, and the pending
// ones staged on s or on no shard.
func (rt *Retry) encode(s int) []byte { return rt.encodeAt(s, time.Now()) }

// encodeAt is encode with the record's lastWriteDate at.
func (rt *Retry) encodeAt(s int, at time.Time) []byte {
	plain := slices.Clone(rt.plain)
	nrich := len(rt.rich)
	for _, p := range rt.pending {
		if !p.res.plain() {
			nrich++
		}
	}
	var rich []StmtResult // an insert's statements are plain: no list of them to build
	if nrich > 0 {
		rich = make([]StmtResult, 0, nrich)
	}
	size := 96 + 24*len(plain) // the record's size, near enough to make out once
	for _, r := range rt.rich {
		rich = append(rich, r)
	}
	for _, p := range rt.pending {
		if len(p.shards) > 0 && !slices.Contains(p.shards, s) {
			continue
		}
		if p.res.plain() {
			plain = addStmt(plain, p.res.Stmt)
		} else {
			rich = append(rich, p.res)
		}
	}
	slices.SortFunc(rich, func(a, b StmtResult) int { return int(a.Stmt) - int(b.Stmt) })
	for _, r := range rich {
		size += 64 + len(r.Upserted.Data) + len(r.Before) + len(r.After)
	}
	idx, out := bsoncore.AppendDocumentStart(make([]byte, 0, size))
	out = bsoncore.AppendInt64Element(out, "txnNumber", rt.txnNumber)
	// As config.transactions' lastWriteDate: the session's records go when it expires
	// (RecordLastWrite).
	out = bsoncore.AppendDateTimeElement(out, "lastWriteDate", at.UnixMilli())
	if rt.committedTxn {
		out = bsoncore.AppendBooleanElement(out, "txnCommitted", true)
	}
	aidx, out := bsoncore.AppendArrayElementStart(out, "ranges")
	for i, r := range plain {
		ridx, o := bsoncore.AppendArrayElementStart(out, strconv.Itoa(i))
		o = bsoncore.AppendInt32Element(o, "0", r.lo)
		o = bsoncore.AppendInt32Element(o, "1", r.hi)
		out, _ = bsoncore.AppendArrayEnd(o, ridx)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	aidx, out = bsoncore.AppendArrayElementStart(out, "stmts")
	for i, r := range rich {
		didx, o := bsoncore.AppendDocumentElementStart(out, strconv.Itoa(i))
		o = bsoncore.AppendInt32Element(o, "stmt", r.Stmt)
		o = bsoncore.AppendInt64Element(o, "n", r.Matched)
		o = bsoncore.AppendInt64Element(o, "nModified", r.Modified)
		if r.Upserted.Type != 0 {
			o = bsoncore.AppendValueElement(o, "upserted", r.Upserted)
		}
		if r.Before != nil {
			o = bsoncore.AppendDocumentElement(o, "before", r.Before)
		}
		if r.After != nil {
			o = bsoncore.AppendDocumentElement(o, "after", r.After)
		}
		out, _ = bsoncore.AppendDocumentEnd(o, didx)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// ErrBadRecord reports a transaction record that does not decode.
var ErrBadRecord = errors.New("write: malformed session transaction record")

// decodeInto adds the statements of record rec to rt (rec's txnNumber was checked).
func (rt *Retry) decodeInto(rec bsoncore.Document) error {
	if c, ok := rec.Lookup("txnCommitted").BooleanOK(); ok && c {
		rt.committedTxn = true
	}
	ranges, ok := rec.Lookup("ranges").ArrayOK()
	if !ok {
		return ErrBadRecord
	}
	vals, _ := ranges.Values()
	for _, v := range vals {
		pair, ok := v.ArrayOK()
		if !ok {
			return ErrBadRecord
		}
		ends, err := pair.Values()
		if err != nil || len(ends) != 2 {
			return ErrBadRecord
		}
		lo, ok1 := ends[0].Int32OK()
		hi, ok2 := ends[1].Int32OK()
		if !ok1 || !ok2 || hi < lo {
			return ErrBadRecord
		}
		for s := lo; s <= hi; s++ {
			rt.plain = addStmt(rt.plain, s)
		}
	}
	stmts, ok := rec.Lookup("stmts").ArrayOK()
	if !ok {
		return ErrBadRecord
	}
	vals, _ = stmts.Values()
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return ErrBadRecord
		}
		var r StmtResult
		var ok1, ok2, ok3 bool
		r.Stmt, ok1 = d.Lookup("stmt").Int32OK()
		r.Matched, ok2 = d.Lookup("n").Int64OK()
		r.Modified, ok3 = d.Lookup("nModified").Int64OK()
		if !ok1 || !ok2 || !ok3 {
			return ErrBadRecord
		}
		if u, err := d.LookupErr("upserted"); err == nil {
			r.Upserted = u
		}
		r.Before, _ = d.Lookup("before").DocumentOK()
		r.After, _ = d.Lookup("after").DocumentOK()
		rt.add(r)
	}
	return nil
}

// LoadRetry reads the retryable-write state of session lsid from every shard's record: the
// highest txnNumber recorded and the union of the statements recorded for it. It returns
// nil when no shard has a record.
func (wp *Path) LoadRetry(lsid []byte) (*Retry, error) {
	gen := wp.cat.TxnRecords().Gen() // before the reads: a merge after them is seen
	var rt *Retry
	var buf []byte
	for _, sh := range wp.cat.Shards() {
		var err error
		buf, err = sh.GetTxnRecord(lsid, buf[:0])
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, catalog.StoreError(err)
		}
		rec := bsoncore.Document(slices.Clone(buf))
		if rec.Validate() != nil {
			return nil, catalog.StoreError(ErrBadRecord)
		}
		txn, ok := rec.Lookup("txnNumber").Int64OK()
		if !ok {
			return nil, catalog.StoreError(ErrBadRecord)
		}
		if rt == nil || txn > rt.txnNumber {
			rt = NewRetry(lsid, txn)
			rt.gen = gen
		}
		if txn == rt.txnNumber {
			if err := rt.decodeInto(rec); err != nil {
				return nil, catalog.StoreError(err)
			}
		}
	}
	return rt, nil
}

// RefreshRetry adds to rt the statements of its txnNumber that the shards of this node now
// record: a write planned again after a StaleConfig may find a shard local that was not when
// rt was loaded (a replicated shard whose copy here started leading it), whose record another
// node wrote; without them a statement executed there would run twice.
func (wp *Path) RefreshRetry(rt *Retry) error {
	if rt == nil {
		return nil
	}
	fresh, err := wp.LoadRetry(rt.lsid)
	if err != nil || fresh == nil || fresh.txnNumber != rt.txnNumber {
		return err
	}
	for _, r := range fresh.plain {
		for stmt := r.lo; stmt <= r.hi; stmt++ {
			if _, ok := rt.Executed(stmt); !ok {
				rt.add(StmtResult{Stmt: stmt, Matched: 1})
			}
		}
	}
	for stmt, res := range fresh.rich {
		if _, ok := rt.Executed(stmt); !ok {
			rt.add(res)
		}
	}
	rt.committedTxn = rt.committedTxn || fresh.committedTxn
	return nil
}

// SetRetry makes the writer record, in its batches, the statements noted with NoteStmt for
// session state rt (nil: not a retryable write).
func (wr *Writer) SetRetry(rt *Retry) { wr.retry = rt }

// NoteStmt records that statement r was executed by the writes staged since the previous
// NoteStmt (none: a statement that changed nothing): Commit writes its record with them.
func (wr *Writer) NoteStmt(r StmtResult) {
	if wr.retry == nil {
		return
	}
	wr.retry.pending = append(wr.retry.pending, pendingStmt{res: r, shards: wr.touched})
	wr.touched = nil
}

// noteTouched remembers that the current statement staged writes on shard s.
func (wr *Writer) noteTouched(s int) {
	if wr.retry != nil && !slices.Contains(wr.touched, s) {
		wr.touched = append(wr.touched, s)
	}
}

// stageRecords adds the session's transaction record to every batch that holds writes, or to
// shard 0's when none does (statements that changed nothing). The caller holds the record
// gate (catalog.RecordGate), at generation gen: when merges of other shards' records ended
// since the session's state was loaded, the records stored on those shards are read and
// united with it first, so that the batch, which replaces them, keeps what the merges brought.
func (wr *Writer) stageRecords(gen int64) {
	rt := wr.retry
	if rt == nil || len(rt.pending) == 0 {
		return
	}
	var shards []int
	for s, b := range wr.batches {
		if !b.Empty() {
			shards = append(shards, s)
		}
	}
	if len(shards) == 0 {
		shards = []int{wr.p.recordShard()}
	}
	fresh := rt.gen == gen
	for _, s := range shards {
		rec := rt.encode(s)
		if !fresh {
			var ok bool
			if rec, ok = wr.p.uniteStored(s, rt, rec); !ok {
				gen = rt.gen // read again at the next commit
			}
		}
		wr.batch(s).SetTxnRecord(rt.lsid, rec)
	}
	rt.gen = gen
}

// RecordNoop commits the record of statement r, which wrote nothing (an update or delete
// that matched nothing), so that a retry answers the same even if a document now matches.
func (wp *Path) RecordNoop(rt *Retry, r StmtResult, sync bool) error {
	wr := &Writer{p: wp}
	wr.SetRetry(rt)
	defer wr.Release()
	wr.NoteStmt(r)
	return wr.Commit(sync)
}
