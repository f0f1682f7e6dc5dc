package crud

import (
	"context"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
)

// delete runs the delete command: each statement of deletes in turn (limit 1: the first
// matching document, limit 0: all of them), stopping at the first failed one when ordered.
func (h *Handlers) delete(ctx context.Context, r *command.Request) error {
	const cmd = "delete"
	a, err := ParseWriteArgs(cmd, "deletes", r.Body)
	if err != nil {
		return err
	}
	stmts := make([]*DeleteStmt, len(a.Stmts))
	for i, v := range a.Stmts {
		if stmts[i], err = ParseDeleteStmt(i, v); err != nil {
			return err
		}
	}
	ci, err := h.Cat.Lookup(r.DB, a.coll)
	if err != nil {
		return err
	}
	if explainOnly(r) {
		op, err := CompileDelete(a, ci, stmts[0])
		if err != nil {
			return err
		}
		return h.explainWrite(ctx, r, op)
	}
	ctx, cancel := query.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	rt, release, err := h.CheckoutRetryable(r)
	if err != nil {
		return err
	}
	defer release()
	res := write.Results{}
	for i, s := range stmts {
		var or write.Result
		if rec, ok := command.Retried(rt, i, s.limit == 0); ok {
			or, err = rec, nil
		} else {
			var op *write.Op
			op, err = CompileDelete(a, ci, s)
			if err == nil {
				op.Retry, op.Stmt = rt, int32(i)
				err = h.runWrite(ctx, r, op, &ModifyStmt{Kind: cmd, list: "deletes", stmt: a.Stmts[i], Index: int32(i)}, &or)
			}
		}
		r.Charge += or.Charge
		if err != nil {
			we, err := stmtWriteError(ctx, i, err)
			if err != nil {
				return err
			}
			res.Errs = append(res.Errs, we)
			if a.ordered {
				break
			}
			continue
		}
		res.N += or.Matched
	}
	h.Counters.DeletedDocs.Add(res.N)
	r.Out = res.AppendReply(r.Out, false)
	return nil
}

// CompileDelete compiles delete statement s of collection ci (nil when it does not exist).
func CompileDelete(a *WriteArgs, ci *catalog.Coll, s *DeleteStmt) (*write.Op, error) {
	coll, err := CollationFor(s.collation, ci)
	if err != nil {
		return nil, err
	}
	f, err := compileWriteFilter(s.q, a.let, coll)
	if err != nil {
		return nil, err
	}
	op := &write.Op{CI: ci, Query: s.q, Filter: f, Hint: s.hint, Multi: s.limit == 0, Sync: a.wc.Sync()}
	if err := op.CheckDeleteTarget(); err != nil {
		return nil, err
	}
	return op, nil
}
