package crud

import (
	"context"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
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
	res, err := h.modifyEach(ctx, r, a, cmd, "deletes",
		func(i int) bool { return stmts[i].limit == 0 },
		func(i int) (*write.Op, error) { return CompileDelete(a, ci, stmts[i]) },
		func(_ int, or *write.Result, res *write.Results) { res.N += or.Matched })
	if err != nil {
		return err
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
