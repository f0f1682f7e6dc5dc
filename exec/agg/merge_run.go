package agg

import (
	"context"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/exec/update"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// mergeGroupDocs and mergeGroupBytes bound the output documents of a $merge that share one
// set of key locks and one commit.
const (
	mergeGroupDocs  = 256
	mergeGroupBytes = 4 << 20
)

// mergeItem is one output document of a $merge on its way into the target.
type mergeItem struct {
	doc   bsoncore.Document // the document, with an _id when the on fields include _id
	key   string            // the values of the on fields, encoded
	query bsoncore.Document // {on: {$eq: value}, ...}
	op    *write.Op         // the update of the matched document
	cand  *write.Candidate  // the matched document, nil when none
	ins   *write.DocWrite   // the insert of an unmatched document, nil when none
	tries int
}

// mergeRun is one execution of a $merge stage.
type mergeRun struct {
	s   *mergeStage
	run *WriteRun
	ci  *catalog.Coll // the target; nil until it exists
	// onID reports that the on fields include _id; noMatch that a document found no
	// match under whenNotMatched: fail.
	onID, noMatch      bool
	inserted, modified int64
}

// Write implements WriteStage: the documents of in go to the target group by group; two
// documents with the same on values never share a group, so the second sees the first.
func (s *mergeStage) Write(ctx context.Context, run *WriteRun, in stream.Stream) error {
	m := &mergeRun{s: s, run: run, onID: slices.Contains(s.onFields, "_id")}
	var err error
	if m.ci, err = run.Cat.Lookup(s.target.db, s.target.coll); err != nil {
		return err
	}
	defer func() {
		run.Host.Written(m.inserted, m.modified)
	}()
	var group []*mergeItem
	keys := map[string]bool{}
	size := 0
	for {
		d, err := in.Next(ctx)
		if err != nil {
			return err
		}
		if d == nil {
			return m.flush(ctx, group)
		}
		it, err := m.item(d)
		if err != nil {
			return err
		}
		if keys[it.key] || len(group) >= mergeGroupDocs || size >= mergeGroupBytes {
			if err := m.flush(ctx, group); err != nil {
				return err
			}
			group, size = group[:0], 0
			clear(keys)
		}
		group = append(group, it)
		keys[it.key] = true
		size += len(it.doc)
	}
}

// item prepares output document d: a copy with a generated _id if the on fields need one,
// its on values (which must be present, not null and not arrays) and the query for them.
func (m *mergeRun) item(d bsoncore.Document) (*mergeItem, error) {
	it := &mergeItem{doc: append(bsoncore.Document(nil), d...)}
	if m.onID {
		if _, ok := catalog.FirstValue(it.doc, "_id"); !ok {
			idx, b := bsoncore.AppendDocumentStart(nil)
			b = append(b, it.doc[4:len(it.doc)-1]...)
			b = bsoncore.AppendObjectIDElement(b, "_id", bsonx.NewObjectID())
			it.doc, _ = bsoncore.AppendDocumentEnd(b, idx)
		}
	}
	var key []byte
	qidx, q := bsoncore.AppendDocumentStart(nil)
	for _, f := range m.s.onFields {
		v, ok := mergeOnValue(it.doc, f)
		switch {
		case ok && v.Type == bsoncore.TypeArray:
			return nil, mongoerr.New(mongoerr.Location51185, "$merge write error: 'on' field '%s' is an array", f)
		case !ok || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined:
			return nil, mongoerr.New(mongoerr.Location51132, "$merge write error: 'on' field '%s' cannot be missing, null, undefined or an array", f)
		}
		key = bsonx.AppendKey(key, v)
		eidx, e := bsoncore.AppendDocumentElementStart(q, f)
		e = bsoncore.AppendValueElement(e, "$eq", v)
		q, _ = bsoncore.AppendDocumentEnd(e, eidx)
	}
	it.query, _ = bsoncore.AppendDocumentEnd(q, qidx)
	it.key = string(key)
	return it, nil
}

// mergeOnValue returns the value at a dotted path through embedded documents only (an
// array on the way means no value), as MongoDB reads $merge's on fields.
func mergeOnValue(doc bsoncore.Document, path string) (bsoncore.Value, bool) {
	cur := doc
	for {
		part, rest, more := strings.Cut(path, ".")
		v, err := cur.LookupErr(part)
		if err != nil {
			return bsoncore.Value{}, false
		}
		if !more {
			return v, true
		}
		if cur, more = v.DocumentOK(); !more {
			return bsoncore.Value{}, false
		}
		path = rest
	}
}

// flush writes a group: it finds each document's match, then writes the group under one
// set of key locks. Documents whose match changed meanwhile go again; an unmatched one
// under whenNotMatched: fail fails the $merge once the group is written.
func (m *mergeRun) flush(ctx context.Context, group []*mergeItem) error {
	for len(group) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.lookup(ctx, group); err != nil {
			return err
		}
		again, err := m.apply(group)
		if err != nil {
			return err
		}
		if m.noMatch {
			return mongoerr.New(mongoerr.MergeStageNoMatchingDocument,
				"$merge could not find a matching document in the target collection for at least one document in the source collection")
		}
		group = again
	}
	return nil
}

// lookup finds the target document each item matches and prepares its write: the update of
// the match, or the insert (creating the target if needed) of an unmatched document.
func (m *mergeRun) lookup(ctx context.Context, group []*mergeItem) error {
	if m.ci != nil {
		m.ci = m.run.Cat.Refresh(m.ci)
	}
	if err := m.checkTargeting(); err != nil {
		return err
	}
	for _, it := range group {
		it.cand, it.ins = nil, nil
		var err error
		if it.op, err = m.newOp(it); err != nil {
			return err
		}
		if m.ci == nil || m.s.whenMatched == mergeFail {
			continue // no target yet, or a plain insert whose duplicate key is the error
		}
		var res write.Result
		d, err := m.run.Host.WritePath().FirstMatch(ctx, &query.Query{CI: m.ci, Filter: it.op.Filter, Limit: 1}, &res)
		m.run.Charge += res.Charge
		if err != nil {
			return err
		}
		if d != nil {
			if it.cand, err = it.op.NewCandidate(d); err != nil {
				return err
			}
		}
	}
	for _, it := range group {
		if it.cand != nil {
			continue
		}
		switch m.s.whenNotMatched {
		case mergeFail:
			m.noMatch = true
		case mergeInsert:
			if err := m.prepareInsert(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// newOp compiles the update of item it: a replacement by the document, {$set: doc},
// {$setOnInsert: doc} or the whenMatched pipeline with the let variables evaluated on it.
func (m *mergeRun) newOp(it *mergeItem) (*write.Op, error) {
	f, err := query.CompileFilter(it.query)
	if err != nil {
		return nil, err
	}
	vals := make([]bsoncore.Value, len(m.s.letNames))
	if m.s.whenMatched == mergePipeline {
		for i, x := range m.s.letExprs {
			if vals[i], err = x.Eval(it.doc, nil); err != nil {
				return nil, err
			}
		}
		vals[len(vals)-1] = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: it.doc}
	}
	u, err := m.s.compileUpdate(it.doc, vals)
	if err != nil {
		return nil, err
	}
	return &write.Op{CI: m.ci, Query: it.query, Filter: f, Upd: u, Sync: m.run.Sync}, nil
}

// compileUpdate compiles the update $merge applies to a matched document for output
// document doc; vals are the values of the let variables (letNames) for a pipeline.
func (s *mergeStage) compileUpdate(doc bsoncore.Document, vals []bsoncore.Value) (*update.Update, error) {
	wrap := func(op string) bsoncore.Value {
		idx, b := bsoncore.AppendDocumentStart(nil)
		b = bsoncore.AppendDocumentElement(b, op, doc)
		b, _ = bsoncore.AppendDocumentEnd(b, idx)
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b}
	}
	switch s.whenMatched {
	case mergeReplace:
		return update.CompileValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}, nil)
	case mergeMerge:
		return update.CompileValue(wrap("$set"), nil)
	case mergeKeepExisting:
		return update.CompileValue(wrap("$setOnInsert"), nil)
	case mergePipeline:
		idx, c := bsoncore.AppendDocumentStart(nil)
		for i, name := range s.letNames {
			v := vals[i]
			if v.Type == 0 {
				v = NullValue
			}
			c = bsoncore.AppendValueElement(c, name, v)
		}
		c, _ = bsoncore.AppendDocumentEnd(c, idx)
		pipe := bsoncore.Value{Type: bsoncore.TypeArray, Data: s.pipeline}
		opts := write.UpdateOptions(pipe, nil, s.env.Opts.Let, c, s.env.Opts.Function)
		return update.CompileValue(pipe, opts)
	}
	return nil, nil // whenMatched: fail only inserts
}

// prepareInsert builds the insert of unmatched item it: what an upsert of the update would
// insert, or the document itself for a pipeline (MongoDB inserts $$new) and for fail.
func (m *mergeRun) prepareInsert(it *mergeItem) error {
	if m.ci == nil {
		ci, err := m.run.Cat.ForWrite(m.s.target.db, m.s.target.coll)
		if err != nil {
			return err
		}
		m.ci = ci
		it.op.CI = ci
	}
	doc := it.doc
	switch m.s.whenMatched {
	case mergeReplace, mergeMerge, mergeKeepExisting:
		d, err := update.Upsert(nil, it.query, it.op.Upd)
		if err != nil {
			return err
		}
		doc = d
	}
	doc, err := write.PrepareInsert(doc)
	if err != nil {
		return err
	}
	w := &write.DocWrite{New: doc}
	if w.Hash, err = m.ci.ShardHash(doc); err != nil {
		return err
	}
	_, w.ID = catalog.DocID(doc, nil)
	it.ins = w
	return nil
}

// checkTargeting applies mongos' routing rules to the writes $merge sends to a sharded
// target: an upsert (whenNotMatched: insert) needs every shard key field among the on
// fields, an update without upsert needs them or _id. whenMatched: fail only inserts.
func (m *mergeRun) checkTargeting() error {
	if m.ci == nil || m.s.whenMatched == mergeFail {
		return nil
	}
	for _, f := range m.ci.ShardKey {
		if slices.Contains(m.s.onFields, f.Path) {
			continue
		}
		if m.s.whenNotMatched == mergeInsert {
			return mongoerr.New(mongoerr.ShardKeyNotFound, "Failed to target upsert by query :: could not extract exact shard key")
		}
		if !m.onID {
			return mongoerr.New(mongoerr.InvalidOptions, "A {multi:false} update on a sharded collection must contain an exact match on _id (and have the collection default collation) or target a single shard (and have the simple collation)")
		}
	}
	return nil
}

// apply writes the group's prepared writes under one set of key locks and one commit. It
// returns the items to look up again (their match was deleted or changed meanwhile, or a
// concurrent insert took their on values). As MongoDB's unordered batch writes, a failed
// document does not stop the others of its group; the first failure is returned once the
// group is committed.
func (m *mergeRun) apply(group []*mergeItem) ([]*mergeItem, error) {
	if m.ci == nil {
		return nil, nil // nothing matched and nothing to insert
	}
	wr := m.run.Host.WritePath().NewWriter(m.run.Cat.Refresh(m.ci))
	wr.Bypass = m.run.Bypass
	var hashes []uint64
	for _, it := range group {
		switch {
		case it.cand != nil:
			w := it.op.Write(it.cand)
			hashes = wr.LockHashes(hashes, &w)
		case it.ins != nil:
			hashes = wr.LockHashes(hashes, it.ins)
		}
	}
	wr.Lock(hashes)
	defer wr.Release()
	locked := make(map[uint64]struct{}, len(hashes))
	for _, h := range hashes {
		locked[h] = struct{}{}
	}
	var again []*mergeItem
	var failed error
	for _, it := range group {
		retry, err := m.applyItem(wr, it, locked)
		if err != nil {
			if failed == nil {
				failed = err
			}
			continue
		}
		if retry {
			it.tries++
			again = append(again, it)
		}
	}
	if err := wr.Commit(m.run.Sync); err != nil {
		return nil, err
	}
	m.run.Charge += wr.Charge()
	return again, failed
}

// applyItem stages the write of one item under the writer's locks and reports whether the
// item must be looked up again.
func (m *mergeRun) applyItem(wr *write.Writer, it *mergeItem, locked map[uint64]struct{}) (bool, error) {
	switch {
	case it.cand != nil:
		if err := m.run.Host.WritePath().ApplyLocked(wr, it.op, it.cand, locked); err != nil {
			return false, m.writeError(err)
		}
		if it.cand.State != write.CandDone {
			return it.tries < write.MaxUpsertRetries, nil
		}
		if it.cand.Changed {
			m.modified++
		}
	case it.ins != nil:
		err := wr.CheckIDFree(it.ins)
		if err == nil {
			err = wr.Stage(it.ins)
		}
		if err != nil {
			if m.s.whenMatched != mergeFail && m.dupOnFields(err) && it.tries < write.MaxUpsertRetries {
				return true, nil // a concurrent insert took the on values: update it instead
			}
			return false, m.writeError(err)
		}
		m.inserted++
	}
	return false, nil
}

// dupOnFields reports whether err is a duplicate key on an index of exactly the on fields.
func (m *mergeRun) dupOnFields(err error) bool {
	me := mongoerr.As(err)
	if me == nil || me.Code != mongoerr.DuplicateKey || me.Info == nil {
		return false
	}
	kp, ok := me.Info.Lookup("keyPattern").DocumentOK()
	if !ok {
		return false
	}
	elems, _ := kp.Elements()
	if len(elems) != len(m.s.onFields) {
		return false
	}
	for _, el := range elems {
		if !slices.Contains(m.s.onFields, el.Key()) {
			return false
		}
	}
	return true
}

// writeError gives a failed write MongoDB's $merge context.
func (m *mergeRun) writeError(err error) error {
	me := mongoerr.As(err)
	switch {
	case me == nil:
		return err
	case me.Code == mongoerr.ImmutableField:
		return withContext(err, "$merge failed to update the matching document, did you attempt to modify the _id or the shard key?")
	case me.Code != mongoerr.DuplicateKey:
		return err
	case m.s.whenMatched == mergeFail && m.dupOnFields(err):
		return withContext(err, "$merge with whenMatched: fail found an existing document with the same values for the 'on' fields")
	}
	return withContext(err, "$merge failed due to a DuplicateKey error")
}
