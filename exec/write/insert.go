package write

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Insert inserts one group of documents (base is the index of vals[0] in the request);
// bypass skips document validation. It reports whether an ordered insert must stop after
// an error. With rt (a retryable write), the documents whose statement was executed before
// count as inserted and are not inserted again, and the others are recorded with their
// writes.
func (wp *Path) Insert(ctx context.Context, ci *catalog.Coll, vals []bsoncore.Value, base int,
	ordered, bypass bool, wc Concern, res *Results, rt *Retry) (bool, error) {
	return wp.insert(ctx, ci, vals, func(i int) int { return base + i }, ordered, bypass, wc, res, rt)
}

// InsertStmts is Insert for documents that are not consecutive in their request: stmts[i]
// is the index of vals[i] (its statement id and its writeErrors index). A cluster node runs
// the documents another node routed to its shards with it.
func (wp *Path) InsertStmts(ctx context.Context, ci *catalog.Coll, vals []bsoncore.Value, stmts []int,
	ordered, bypass bool, wc Concern, res *Results, rt *Retry) (bool, error) {
	return wp.insert(ctx, ci, vals, func(i int) int { return stmts[i] }, ordered, bypass, wc, res, rt)
}

// insert is Insert with vals[i] at index at(i) of its request.
func (wp *Path) insert(ctx context.Context, ci *catalog.Coll, vals []bsoncore.Value, at func(int) int,
	ordered, bypass bool, wc Concern, res *Results, rt *Retry) (bool, error) {
	if ci.View != nil { // MongoDB fails the batch's first write and stops
		res.Errs = append(res.Errs, mongoerr.WriteError{Index: at(0), Err: catalog.ViewError(ci.NS())})
		return true, nil
	}
	writes := make([]DocWrite, len(vals))
	failed := make([]error, len(vals))
	done := make([]bool, len(vals))
	hashes := make([]uint64, 0, len(vals)*(1+len(ci.WriteUniques)))
	ids := make([]byte, 0, len(vals)*16) // the encoded _ids, one allocation (an ObjectID takes 14 bytes)
	wr := wp.NewWriter(ci)
	// Each document stages its _id and its unique keys: a map of that size from the start
	// instead of the growths (and rehashes) that reach it.
	wr.staged = make(map[string][]byte, len(vals)*(1+len(ci.WriteUniques)))
	wr.SetRetry(rt)
	wr.Bypass = bypass
	for i, v := range vals {
		if rt != nil {
			if _, ok := rt.Executed(int32(at(i))); ok {
				done[i] = true
				continue
			}
		}
		doc, ok := v.DocumentOK()
		if !ok {
			failed[i] = mongoerr.New(mongoerr.TypeMismatch, "BSON field 'insert.documents.%d' is the wrong type '%s', expected type 'object'", at(i), bsonx.TypeName(v.Type))
			continue
		}
		doc, err := PrepareInsert(doc)
		if err == nil {
			writes[i].Hash, err = ci.ShardHash(doc)
		}
		if err != nil {
			failed[i] = err
			continue
		}
		start := len(ids)
		_, ids = catalog.DocID(doc, ids)
		writes[i].ID = ids[start:len(ids):len(ids)] // when ids grows, it moves and this stays
		writes[i].New = doc
		hashes = wr.LockHashes(hashes, &writes[i])
	}
	if err := wp.lockInsert(ctx, wr, ci, hashes); err != nil {
		return true, err
	}
	defer wr.Release()
	stop := false
	for i := range writes {
		if done[i] {
			res.N++
			continue
		}
		err := failed[i]
		if err == nil {
			err = wr.CheckIDFree(&writes[i])
		}
		if err == nil {
			err = wr.Stage(&writes[i])
		}
		if err != nil {
			if mongoerr.As(err) == nil {
				return true, err
			}
			res.Errs = append(res.Errs, mongoerr.WriteError{Index: at(i), Err: mongoerr.As(err)})
			if ordered {
				stop = true
				break
			}
			continue
		}
		wr.NoteStmt(StmtResult{Stmt: int32(at(i)), Matched: 1})
		res.N++
	}
	if err := wr.Commit(wc.Sync()); err != nil {
		return true, err
	}
	res.Charge += wr.Charge()
	return stop, nil
}

// lockInsert takes an insert's key locks, the failpoint pauseInsertBeforeLock passed, and
// checks under them that its collection still exists under its name. One dropped or renamed
// since the insert looked it up, or replaced by a rename's dropTarget, fails with StaleConfig
// and holds nothing: the
// documents go where the name leads now (the caller routes them again), never into the
// dropped collection after its drop's change event.
func (wp *Path) lockInsert(ctx context.Context, wr *Writer, ci *catalog.Coll, hashes []uint64) error {
	if wp.insertHook != nil {
		wp.insertHook()
	}
	if err := wr.LockCtx(ctx, hashes); err != nil {
		return err
	}
	if !wp.cat.Exists(ci) { // ci as looked up: wr.ci is its current version
		wr.Release()
		return catalog.CollChangedError(ci)
	}
	return nil
}
