package exec

import (
	"github.com/cleavedb/cleave/exec/query"

	"github.com/cleavedb/cleave/exec/catalog"

	"context"
)

// delete runs the delete command: each statement of deletes in turn (limit 1: the first
// matching document, limit 0: all of them), stopping at the first failed one when ordered.
func (e *Executor) delete(ctx context.Context, r *request) error {
	const cmd = "delete"
	a, err := parseWriteArgs(cmd, "deletes", r.body)
	if err != nil {
		return err
	}
	stmts := make([]*deleteStmt, len(a.stmts))
	for i, v := range a.stmts {
		if stmts[i], err = parseDeleteStmt(i, v); err != nil {
			return err
		}
	}
	ci, err := e.cat.Lookup(r.db, a.coll)
	if err != nil {
		return err
	}
	if explainOnly(r) {
		op, err := compileDelete(a, ci, stmts[0])
		if err != nil {
			return err
		}
		return e.explainWrite(ctx, r, op)
	}
	ctx, cancel := query.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	res := writeResult{}
	for i, s := range stmts {
		op, err := compileDelete(a, ci, s)
		var or opResult
		if err == nil {
			err = e.runOp(ctx, op, &or)
		}
		r.charge += or.charge
		if err != nil {
			we, err := stmtWriteError(ctx, i, err)
			if err != nil {
				return err
			}
			res.errs = append(res.errs, we)
			if a.ordered {
				break
			}
			continue
		}
		res.n += or.matched
	}
	e.counters.deletedDocs.Add(res.n)
	return res.appendReply(r, false)
}

// compileDelete compiles delete statement s of collection ci (nil when it does not exist).
func compileDelete(a *writeArgs, ci *catalog.Coll, s *deleteStmt) (*writeOp, error) {
	if err := catalog.CheckCollation(s.collation); err != nil {
		return nil, err
	}
	f, err := compileWriteFilter(s.q, a.let)
	if err != nil {
		return nil, err
	}
	op := &writeOp{ci: ci, query: s.q, filter: f, hint: s.hint, multi: s.limit == 0, sync: a.wc.sync()}
	if err := op.checkDeleteTarget(); err != nil {
		return nil, err
	}
	return op, nil
}
