package exec

import (
	"github.com/cleavedb/cleave/exec/query"

	"github.com/cleavedb/cleave/exec/catalog"

	"bytes"
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/match"
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

// maxUpsertRetries bounds how often an upsert that lost a race on a unique key (E11000)
// starts again, so that it updates the document the winner inserted.
const maxUpsertRetries = 10

// writeOp is one update or delete statement, or a findAndModify, compiled for execution:
// the documents it targets and what it does to each.
//
// Reads come from snapshots (a query stream); each change is applied under the writer's key
// locks to the document as it is in the store then, re-read and re-matched, so that
// concurrent writers never lose an update. A multi write never sees its own writes: the
// snapshot it scans predates them.
type writeOp struct {
	ci     *catalog.Coll // nil: the collection does not exist (nothing matches)
	query  bsoncore.Document
	filter *match.Filter
	sort   []bsonx.SortField
	hint   bsoncore.Value
	upd    *update.Update // nil for a delete
	multi  bool
	upsert bool
	sync   bool // commit synced (the write concern asks for durability)
	// keepImages asks for the pre- and post-image of the document written (findAndModify).
	keepImages bool
}

// opResult is what a writeOp did.
type opResult struct {
	matched  int64 // documents matched (updated or not) or deleted
	modified int64 // documents an update changed
	// upserted is the _id of the document an upsert inserted; Type 0 when none.
	upserted bsoncore.Value
	// before and after are the images of the last document written, when keepImages.
	before, after bsoncore.Document
	charge        float64 // request units
}

// candState is where a candidate document stands after an attempt to write it.
type candState uint8

const (
	candPending candState = iota // not attempted yet, or failed
	candDone                     // written, or matched and left unchanged
	candGone                     // deleted meanwhile, or no longer matching
	candRetry                    // changed meanwhile so that it needs keys not locked: try again
)

// candidate is one document a writeOp targets: the version its change was computed from
// (read from a snapshot, or re-read under the locks) and that change.
type candidate struct {
	doc     bsoncore.Document
	hash    uint64
	id      []byte // encoded _id
	new     bsoncore.Document
	newHash uint64 // set when the shard-key value changes
	changed bool
	err     error // the update failed on doc
	state   candState
}

// newCandidate copies doc (a stream's document, valid until its next call) and computes the
// op's change to it.
func (op *writeOp) newCandidate(doc bsoncore.Document) (*candidate, error) {
	c := &candidate{doc: append(bsoncore.Document(nil), doc...)}
	var err error
	if c.hash, err = op.ci.ShardHash(c.doc); err != nil {
		return nil, err
	}
	_, c.id = catalog.DocID(c.doc, nil)
	op.compute(op.ci, c)
	return c, nil
}

// compute applies the op's update to c.doc, recording the result or the error in c.
func (op *writeOp) compute(ci *catalog.Coll, c *candidate) {
	c.new, c.newHash, c.changed, c.err = nil, 0, false, nil
	if op.upd == nil {
		return
	}
	pos := -1
	if op.upd.NeedsPosition() {
		_, pos = op.filter.MatchPos(c.doc)
	}
	out, changed, err := op.upd.Apply(nil, c.doc, pos, false)
	if err == nil && changed {
		err = validateReplacement(out)
	}
	if err == nil && changed && ci.Hashed >= 0 {
		var h uint64
		if h, err = ci.ShardHash(out); err == nil && h != c.hash {
			c.newHash = h
		}
	}
	if err != nil {
		c.err = err
		return
	}
	c.new, c.changed = out, changed
}

// write returns c's document write: a delete, or the replacement by the updated document.
// A candidate whose update failed or changed nothing locks its document only.
func (op *writeOp) write(c *candidate) docWrite {
	w := docWrite{hash: c.hash, id: c.id, old: c.doc}
	if op.upd != nil && c.changed {
		w.new, w.newHash = c.new, c.newHash
	}
	return w
}

// runOp executes op: its matching documents, then the upsert when nothing matched. An upsert
// that collides on a unique key its query fixes by equality starts again, as MongoDB
// retries it, so that concurrent upserts of one query create one document.
func (e *Executor) runOp(ctx context.Context, op *writeOp, res *opResult) error {
	if op.ci == nil {
		return nil // no collection: nothing matches, and the caller created it for an upsert
	}
	for attempt := 0; ; attempt++ {
		charge := res.charge
		*res = opResult{charge: charge}
		var err error
		if op.multi {
			err = e.runMulti(ctx, op, res)
		} else {
			err = e.runOne(ctx, op, res)
		}
		if err != nil || res.matched > 0 || !op.upsert || op.upd == nil {
			return err
		}
		err = e.runUpsert(op, res)
		if err == nil || attempt >= maxUpsertRetries || !op.upsertRetryable(err) {
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
func (op *writeOp) upsertRetryable(err error) bool {
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
		if _, ok := op.filter.Equalities(el.Key()); !ok {
			return false
		}
	}
	return len(elems) > 0
}

// runMulti applies op to every document that matches it, group by group.
func (e *Executor) runMulti(ctx context.Context, op *writeOp, res *opResult) error {
	q := &query.Query{CI: op.ci, Filter: op.filter, Hint: op.hint}
	stream, _, shards, err := e.query.Open(q)
	if err != nil {
		return err
	}
	defer func() {
		stream.Close()
		for _, s := range shards {
			res.charge += readCharge(&s.Stats)
		}
	}()
	var group []*candidate
	size := 0
	for {
		doc, err := stream.Next(ctx)
		if err != nil {
			return err
		}
		if doc != nil {
			c, err := op.newCandidate(doc)
			if err != nil {
				return err
			}
			group = append(group, c)
			size += len(doc)
			if len(group) < writeGroupDocs && size < writeGroupBytes && c.err == nil {
				continue
			}
		}
		if len(group) > 0 {
			if err := e.applyWithRetry(ctx, op, group, res); err != nil {
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
func (e *Executor) runOne(ctx context.Context, op *writeOp, res *opResult) error {
	q := &query.Query{CI: op.ci, Filter: op.filter, Sort: op.sort, Limit: 1, Hint: op.hint}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		doc, err := e.firstMatch(ctx, q, res)
		if err != nil || doc == nil {
			return err
		}
		c, err := op.newCandidate(doc)
		if err != nil {
			return err
		}
		if err := e.applyWithRetry(ctx, op, []*candidate{c}, res); err != nil {
			return err
		}
		if c.state == candDone {
			return nil
		}
	}
}

// firstMatch returns the first document q yields, or nil.
func (e *Executor) firstMatch(ctx context.Context, q *query.Query, res *opResult) (bsoncore.Document, error) {
	stream, _, shards, err := e.query.Open(q)
	if err != nil {
		return nil, err
	}
	doc, err := stream.Next(ctx)
	stream.Close()
	for _, s := range shards {
		res.charge += readCharge(&s.Stats)
	}
	return doc, err
}

// applyWithRetry applies op to cands until each is done or gone: candidates that changed
// so that they need more locks go again with the version they were last read in.
func (e *Executor) applyWithRetry(ctx context.Context, op *writeOp, cands []*candidate, res *opResult) error {
	for len(cands) > 0 {
		if err := e.applyGroup(op, cands, res); err != nil {
			return err
		}
		again := cands[:0:0]
		for _, c := range cands {
			if c.state == candRetry {
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
func (e *Executor) applyGroup(op *writeOp, cands []*candidate, res *opResult) error {
	wr := e.newWriter(e.cat.Refresh(op.ci))
	var hashes []uint64
	for _, c := range cands {
		w := op.write(c)
		hashes = wr.lockHashes(hashes, &w)
	}
	wr.lock(hashes)
	defer wr.release()
	locked := make(map[uint64]struct{}, len(hashes))
	for _, h := range hashes {
		locked[h] = struct{}{}
	}
	var failed error
	var written int64
	for _, c := range cands {
		if err := e.applyLocked(wr, op, c, locked); err != nil {
			failed = err
			break
		}
		if c.state != candDone {
			continue
		}
		written++
		res.matched++
		if c.changed {
			res.modified++
		}
		if op.keepImages {
			res.before, res.after = c.doc, c.doc
			if c.changed {
				res.after = c.new
			}
		}
	}
	if err := wr.commit(op.sync); err != nil {
		return err
	}
	res.charge += float64(written) * 5
	return failed
}

// applyLocked re-reads candidate c under the writer's locks and stages its write. c ends
// done, gone or retry; an error leaves it pending and stages nothing.
func (e *Executor) applyLocked(wr *writer, op *writeOp, c *candidate, locked map[uint64]struct{}) error {
	ci := wr.ci
	s := ci.Map.Partition(ci.Map.Locate(c.hash)).Shard
	cur, err := e.st.Shards[s].GetDoc(ci.Meta.ID, c.hash, c.id, nil)
	if errors.Is(err, store.ErrNotFound) {
		c.state = candGone
		return nil
	}
	if err != nil {
		return catalog.StoreError(err)
	}
	if !bytes.Equal(cur, c.doc) {
		ok, err := op.filter.MatchErr(cur)
		if err != nil {
			return err
		}
		if !ok {
			c.state = candGone
			return nil
		}
		c.doc = cur
		op.compute(ci, c)
	}
	if c.err != nil {
		return c.err
	}
	w := op.write(c)
	for _, h := range wr.lockHashes(nil, &w) {
		if _, ok := locked[h]; !ok {
			c.state = candRetry
			return nil
		}
	}
	if op.upd == nil || c.changed {
		if err := wr.stage(&w); err != nil {
			return err
		}
	}
	c.state = candDone
	return nil
}

// runUpsert inserts the document an upsert makes of its query and update.
func (e *Executor) runUpsert(op *writeOp, res *opResult) error {
	doc, err := update.Upsert(nil, op.query, op.upd)
	if err != nil {
		return err
	}
	if doc, err = prepareInsert(doc); err != nil {
		return err
	}
	w := docWrite{new: doc}
	if w.hash, err = op.ci.ShardHash(doc); err != nil {
		return err
	}
	id, key := catalog.DocID(doc, nil)
	w.id = key
	wr := e.newWriter(e.cat.Refresh(op.ci))
	wr.lock(wr.lockHashes(nil, &w))
	defer wr.release()
	if err := wr.checkIDFree(&w); err != nil {
		return err
	}
	if err := wr.stage(&w); err != nil {
		return err
	}
	if err := wr.commit(op.sync); err != nil {
		return err
	}
	res.upserted = id
	res.charge += 5
	if op.keepImages {
		res.after = doc
	}
	return nil
}
