package write

import (
	"bytes"
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/update"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// writeGroupDocs and writeGroupBytes bound the documents of a multi update or delete that
// share one set of key locks and one synced commit.
const (
	writeGroupDocs  = 256
	writeGroupBytes = 4 << 20
)

// MaxUpsertRetries bounds how often an upsert that lost a race on a unique key (E11000)
// starts again, so that it updates the document the winner inserted.
const MaxUpsertRetries = 10

// Op is one update or delete statement, or a findAndModify, compiled for execution:
// the documents it targets and what it does to each.
//
// Reads come from snapshots (a query stream); each change is applied under the writer's key
// locks to the document as it is in the store then, re-read and re-matched, so that
// concurrent writers never lose an update (a write by _id reads once, under the lock it
// takes first: runPoint). A multi write never sees its own writes: the snapshot it scans
// predates them.
type Op struct {
	CI     *catalog.Coll // nil: the collection does not exist (nothing matches)
	Query  bsoncore.Document
	Filter *match.Filter
	Sort   []bsonx.SortField
	Hint   bsoncore.Value
	Upd    *update.Update // nil for a delete
	Multi  bool
	Upsert bool
	Sync   bool // commit synced (the write concern asks for durability)
	// KeepImages asks for the pre- and post-image of the document written (findAndModify).
	KeepImages bool
	// Retry, for a statement of a retryable write, is its session's state: the statement's
	// result (Stmt is its id) is recorded with its writes (retry.go). A multi statement is
	// not recorded: its writes span several batches (drivers never retry one).
	Retry *Retry
	Stmt  int32
	// Bypass skips document validation (bypassDocumentValidation).
	Bypass bool
	// Shards, when not nil, restricts the op to the documents of those shards (cluster
	// mode: the part of a statement that runs on one node, remote.go).
	Shards []int
	// Forward, set for a multi statement only, leaves the documents whose partitions moved
	// to another node's shard while it ran to the caller (Result.Moved), who writes them on
	// their new owner; without it such a statement fails with StaleConfig (remote.go).
	Forward bool
}

// recorded reports whether op's result is recorded for a retry.
func (op *Op) recorded() bool { return op.Retry != nil && !op.Multi }

// stmtResult is what a retry of op must answer, given its result so far.
func (op *Op) stmtResult(res *Result) StmtResult {
	return StmtResult{Stmt: op.Stmt, Matched: res.Matched, Modified: res.Modified,
		Upserted: res.Upserted, Before: res.Before, After: res.After}
}

// Result is what a writeOp did.
type Result struct {
	Matched  int64 // documents matched (updated or not) or deleted
	Modified int64 // documents an update changed
	// Upserted is the _id of the document an upsert inserted; Type 0 when none.
	Upserted bsoncore.Value
	// Before and after are the images of the last document written, when keepImages.
	Before, After bsoncore.Document
	Charge        float64 // request units
	// Moved are the documents that matched but were not written here: their partitions
	// moved to another node's shard before their key locks were taken (Op.Forward).
	Moved []Target
	// Plan is the plan the write found its documents by, for the slow operations' plan
	// summary; nil if none (a write on another node's shard).
	Plan *query.Plan
}

// pointPlan is the plan of a read by _id that query.ReadPoint served without planning.
var pointPlan = &query.Plan{Kind: query.PlanIDs}

// Target is a document by its shard-key hash and encoded _id.
type Target struct {
	Hash uint64
	ID   []byte
}

// CandState is where a candidate document stands after an attempt to write it.
type CandState uint8

// Where a candidate stands.
const (
	candPending CandState = iota // not attempted yet, or failed
	CandDone                     // written, or matched and left unchanged
	candGone                     // deleted meanwhile, or no longer matching
	candRetry                    // changed meanwhile so that it needs keys not locked: try again
	candMoved                    // its partition moved to another node's shard meanwhile
)

// Candidate is one document a writeOp targets: the version its change was computed from
// (read from a snapshot, or re-read under the locks) and that change.
type Candidate struct {
	Doc     bsoncore.Document
	Hash    uint64
	ID      []byte // encoded _id
	New     bsoncore.Document
	NewHash uint64 // set when the shard-key value changes
	Changed bool
	Err     error // the update failed on doc
	State   CandState
}

// NewCandidate copies doc (a stream's document, valid until its next call) and computes the
// op's change to it.
func (op *Op) NewCandidate(doc bsoncore.Document) (*Candidate, error) {
	return op.newCandidate(append(bsoncore.Document(nil), doc...))
}

// newCandidate is NewCandidate for a document the candidate may keep: no other code
// writes to it, or appends to it (its capacity is its length).
func (op *Op) newCandidate(doc bsoncore.Document) (*Candidate, error) {
	c := &Candidate{Doc: doc[:len(doc):len(doc)]}
	var err error
	if c.Hash, err = op.CI.ShardHash(c.Doc); err != nil {
		return nil, err
	}
	_, c.ID = catalog.DocID(c.Doc, nil)
	op.compute(op.CI, c)
	return c, nil
}

// compute applies the op's update to c.doc, recording the result or the error in c.
func (op *Op) compute(ci *catalog.Coll, c *Candidate) {
	c.New, c.NewHash, c.Changed, c.Err = nil, 0, false, nil
	if op.Upd == nil {
		return
	}
	pos := -1
	if op.Upd.NeedsPosition() {
		_, pos = op.Filter.MatchPos(c.Doc)
	}
	// The new document is about the old one's size: one buffer, not a growing one.
	out, changed, err := op.Upd.Apply(make([]byte, 0, len(c.Doc)+64), c.Doc, pos, false)
	if err == nil && changed {
		err = validateReplacement(out)
	}
	if err == nil && changed && ci.Hashed >= 0 {
		var h uint64
		if h, err = ci.ShardHash(out); err == nil && h != c.Hash {
			c.NewHash = h
		}
	}
	if err != nil {
		c.Err = err
		return
	}
	c.New, c.Changed = out, changed
}

// Write returns c's document write: a delete, or the replacement by the updated document.
// A candidate whose update failed or changed nothing locks its document only.
func (op *Op) Write(c *Candidate) DocWrite {
	w := DocWrite{Hash: c.Hash, ID: c.ID, Old: c.Doc}
	if op.Upd != nil && c.Changed {
		w.New, w.NewHash, w.Paths, w.Replace = c.New, c.NewHash, op.Upd.ModifiedPaths(), op.Upd.IsReplacement()
	}
	return w
}

// Run executes op: its matching documents, then the upsert when nothing matched. An upsert
// that collides on a unique key its query fixes by equality starts again, as MongoDB
// retries it, so that concurrent upserts of one query create one document.
func (wp *Path) Run(ctx context.Context, op *Op, res *Result) error {
	err := wp.run(ctx, op, res)
	if err != nil || !op.recorded() {
		return err
	}
	if _, ok := op.Retry.Executed(op.Stmt); ok {
		return nil // recorded with its writes
	}
	return wp.RecordNoop(op.Retry, op.stmtResult(res), op.Sync)
}

// run is Run without the record of a retryable statement that wrote nothing.
func (wp *Path) run(ctx context.Context, op *Op, res *Result) error {
	if op.CI == nil {
		return nil // no collection: nothing matches, and the caller created it for an upsert
	}
	if op.CI.View != nil {
		return catalog.ViewError(op.CI.NS())
	}
	for attempt := 0; ; attempt++ {
		charge := res.Charge
		*res = Result{Charge: charge}
		var err error
		if op.Multi {
			err = wp.runMulti(ctx, op, res)
		} else {
			err = wp.runOne(ctx, op, res)
		}
		if err != nil || res.Matched > 0 || len(res.Moved) > 0 || !op.Upsert || op.Upd == nil {
			return err
		}
		err = wp.runUpsert(ctx, op, res)
		if err == nil || attempt >= MaxUpsertRetries || !op.upsertRetryable(err) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// upsertRetryable reports whether err is a duplicate key on an index whose every field the
// query fixes by equality (MongoDB's shouldRetryDuplicateKeyException): the document that
// holds the key now matches the query, so a new attempt updates it.
func (op *Op) upsertRetryable(err error) bool {
	me := mongoerr.As(err)
	if me == nil || me.Code != mongoerr.DuplicateKey || me.Info == nil {
		return false
	}
	kp, ok := me.Info.Lookup("keyPattern").DocumentOK()
	if !ok {
		return false
	}
	elems, _ := kp.Elements()
	for _, el := range elems {
		if _, ok := op.Filter.Equalities(el.Key()); !ok {
			return false
		}
	}
	return len(elems) > 0
}

// runMulti applies op to every document that matches it, group by group.
func (wp *Path) runMulti(ctx context.Context, op *Op, res *Result) error {
	q := &query.Query{CI: op.CI, Filter: op.Filter, Hint: op.Hint, Shards: op.Shards}
	stream, plan, shards, err := wp.query.Open(q)
	if err != nil {
		return err
	}
	res.Plan = plan
	defer func() {
		stream.Close()
		for _, s := range shards {
			res.Charge += s.Stats.Charge()
		}
	}()
	var group []*Candidate
	size := 0
	for {
		doc, err := stream.Next(ctx)
		if err != nil {
			return err
		}
		if doc != nil {
			c, err := op.NewCandidate(doc)
			if err != nil {
				return err
			}
			group = append(group, c)
			size += len(doc)
			if len(group) < writeGroupDocs && size < writeGroupBytes && c.Err == nil {
				continue
			}
		}
		if len(group) > 0 {
			if wp.groupHook != nil {
				wp.groupHook()
			}
			if err := wp.applyWithRetry(ctx, op, group, res); err != nil {
				return err
			}
			group, size = group[:0], 0
		}
		if doc == nil {
			return nil
		}
	}
}

// runOne applies op to the first document that matches it (in sort order). When that
// document is deleted or stops matching before its key is locked, the query runs again.
func (wp *Path) runOne(ctx context.Context, op *Op, res *Result) error {
	q := &query.Query{CI: op.CI, Filter: op.Filter, Sort: op.Sort, Limit: 1, Hint: op.Hint, Shards: op.Shards}
	if done, err := wp.runPoint(ctx, op, q, res); done || err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		doc, err := wp.FirstMatch(ctx, q, res)
		if err != nil {
			return err
		}
		if doc == nil {
			if wp.cat.Replaced(op.CI) { // the read may have met the old collection's data deleted
				return replacedError(op.CI)
			}
			return nil
		}
		c, err := op.newCandidate(doc) // FirstMatch's document is ours
		if err != nil {
			return err
		}
		if err := wp.applyWithRetry(ctx, op, []*Candidate{c}, res); err != nil {
			return err
		}
		if c.State == CandDone {
			return nil
		}
	}
}

// FirstMatch returns the first document q yields, or nil. The document is the caller's: it
// is copied out of the stream before the stream closes, unless the stream read it into a
// buffer of its own that it leaves behind (ownsDoc). A read by _id on one local shard is
// read directly, without planning a query (query.ReadPoint).
func (wp *Path) FirstMatch(ctx context.Context, q *query.Query, res *Result) (bsoncore.Document, error) {
	if doc, ru, ok, err := wp.query.ReadPoint(ctx, q); ok {
		res.Charge += ru
		res.Plan = pointPlan
		return doc, err
	}
	stream, p, shards, err := wp.query.Open(q)
	if err != nil {
		return nil, err
	}
	res.Plan = p
	doc, err := stream.Next(ctx)
	if doc != nil && !wp.ownsDoc(q, p, shards) {
		doc = append(bsoncore.Document(nil), doc...)
	}
	stream.Close()
	for _, s := range shards {
		res.Charge += s.Stats.Charge()
	}
	return doc, err
}

// ownsDoc reports whether the documents of q's stream are the caller's once the stream is
// closed: a point read by _id on this node's shards reads each into the stream's own buffer,
// which it neither recycles (q.RecycleBuffers is off) nor reuses after Close; a scan's
// documents are its iterator's, another node's its reply's.
func (wp *Path) ownsDoc(q *query.Query, p *query.Plan, shards []*query.ShardStream) bool {
	if q.RecycleBuffers || p == nil || p.Kind != query.PlanIDs {
		return false
	}
	list := wp.shardList()
	for _, s := range shards {
		if _, remote := list[s.Shard].Node(); remote {
			return false
		}
	}
	return true
}

// applyWithRetry applies op to cands until each is done or gone: candidates that changed
// so that they need more locks go again with the version they were last read in.
func (wp *Path) applyWithRetry(ctx context.Context, op *Op, cands []*Candidate, res *Result) error {
	for len(cands) > 0 {
		if err := wp.applyGroup(ctx, op, cands, res); err != nil {
			return err
		}
		again := cands[:0:0]
		for _, c := range cands {
			if c.State == candRetry {
				again = append(again, c)
			}
		}
		cands = again
		if len(cands) > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyGroup writes cands under one set of key locks and one commit. Every candidate is
// re-read under the locks: one that changed is matched and computed again, and retried
// when its new unique keys were not locked. The first failure (a failed update, E11000)
// stops the group; what was staged before it is committed.
func (wp *Path) applyGroup(ctx context.Context, op *Op, cands []*Candidate, res *Result) error {
	wr := wp.opWriter(op)
	var hashes []uint64
	for _, c := range cands {
		w := op.Write(c)
		hashes = wr.LockHashes(hashes, &w)
	}
	if err := wr.LockCtx(ctx, hashes); err != nil {
		return err
	}
	defer wr.Release()
	return wp.commitGroup(wr, op, cands, hashes, res, true)
}

// opWriter returns a writer for op's collection, recording op's result when it is retryable.
func (wp *Path) opWriter(op *Op) *Writer {
	wr := wp.NewWriter(wp.cat.Refresh(op.CI))
	if op.recorded() {
		wr.SetRetry(op.Retry)
	}
	wr.Bypass = op.Bypass
	return wr
}

// commitGroup stages cands under wr's locks (hashes) and commits them: applyGroup's second
// half. reread: each candidate is read again under the locks (see applyLocked).
func (wp *Path) commitGroup(wr *Writer, op *Op, cands []*Candidate, hashes []uint64, res *Result, reread bool) error {
	locked := make(map[uint64]struct{}, len(hashes))
	for _, h := range hashes {
		locked[h] = struct{}{}
	}
	var failed error
	for _, c := range cands {
		if err := wp.applyLocked(wr, op, c, locked, reread); err != nil {
			failed = err
			break
		}
		if c.State == candMoved {
			if !op.Forward {
				failed = movedError(op)
				break
			}
			res.Moved = append(res.Moved, Target{Hash: c.Hash, ID: c.ID})
		}
		if c.State != CandDone {
			continue
		}
		res.Matched++
		if c.Changed {
			res.Modified++
		}
		if op.KeepImages {
			res.Before, res.After = c.Doc, c.Doc
			if c.Changed {
				res.After = c.New
			}
		}
	}
	if failed == nil && res.Matched > 0 {
		wr.NoteStmt(op.stmtResult(res)) // no-op unless recorded (SetRetry above)
	}
	if err := wr.Commit(op.Sync); err != nil {
		return err
	}
	res.Charge += wr.Charge()
	return failed
}

// ApplyLocked re-reads candidate c under the writer's locks and stages its write. c ends
// done, gone or retry; an error leaves it pending and stages nothing.
func (wp *Path) ApplyLocked(wr *Writer, op *Op, c *Candidate, locked map[uint64]struct{}) error {
	return wp.applyLocked(wr, op, c, locked, true)
}

// applyLocked is ApplyLocked; reread false skips the read, for a candidate that was read
// under the locks already (runPoint).
func (wp *Path) applyLocked(wr *Writer, op *Op, c *Candidate, locked map[uint64]struct{}, reread bool) error {
	if reread {
		if err := wp.reread(wr, op, c); err != nil || c.State == candGone || c.State == candMoved {
			return err
		}
	}
	if c.Err != nil {
		return c.Err
	}
	w := op.Write(c)
	for _, h := range wr.LockHashes(nil, &w) {
		if _, ok := locked[h]; !ok {
			c.State = candRetry
			return nil
		}
	}
	if op.Upd == nil || c.Changed {
		if err := wr.Stage(&w); err != nil {
			return err
		}
	}
	c.State = CandDone
	return nil
}

// reread reads candidate c again under the writer's locks: one that changed is matched and
// computed again, one that is gone or no longer matches ends candGone, one whose partition
// is now another node's ends candMoved (its owner has the only current copy).
func (wp *Path) reread(wr *Writer, op *Op, c *Candidate) error {
	ci := wr.ci
	if ci.Capped != nil { // a capped document is at its record id, which its _id gives
		rid, found, err := wr.CappedRecordID(c.ID)
		if err != nil || !found {
			c.State = candGone
			return err
		}
		c.Hash = rid
	}
	s := ci.Map.Partition(ci.Map.Locate(c.Hash)).Shard
	sh := wp.shardList()[s]
	if _, remote := sh.Node(); remote {
		c.State = candMoved
		return nil
	}
	cur, err := sh.GetDoc(ci.Meta.ID, c.Hash, c.ID, nil)
	if errors.Is(err, store.ErrNotFound) {
		c.State = candGone
		return nil
	}
	if err != nil {
		return catalog.StoreError(err)
	}
	if !bytes.Equal(cur, c.Doc) {
		ok, err := op.Filter.MatchErr(cur)
		if err != nil {
			return err
		}
		if !ok {
			c.State = candGone
			return nil
		}
		c.Doc = cur
		op.compute(ci, c)
	}
	return nil
}

// runUpsert inserts the document an upsert makes of its query and update.
func (wp *Path) runUpsert(ctx context.Context, op *Op, res *Result) error {
	doc, err := update.Upsert(nil, op.Query, op.Upd)
	if err != nil {
		return err
	}
	if doc, err = PrepareInsert(doc); err != nil {
		return err
	}
	w := DocWrite{New: doc}
	if w.Hash, err = op.CI.ShardHash(doc); err != nil {
		return err
	}
	id, key := catalog.DocID(doc, nil)
	w.ID = key
	wr := wp.NewWriter(wp.cat.Refresh(op.CI))
	if op.recorded() {
		wr.SetRetry(op.Retry)
	}
	wr.Bypass = op.Bypass
	if err := wr.LockCtx(ctx, wr.LockHashes(nil, &w)); err != nil {
		return err
	}
	defer wr.Release()
	if err := wr.CheckIDFree(&w); err != nil {
		return err
	}
	if err := wr.Stage(&w); err != nil {
		return err
	}
	up := Result{Upserted: id}
	if op.KeepImages {
		up.After = doc
	}
	wr.NoteStmt(op.stmtResult(&up))
	if err := wr.Commit(op.Sync); err != nil {
		return err
	}
	res.Upserted = id
	res.Charge += wr.Charge()
	if op.KeepImages {
		res.After = doc
	}
	return nil
}
