package crud

import (
	"context"
	"slices"

	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// modifyEach runs the statements of an update or delete command (kind; list names their array)
// in order, under the command's maxTimeMS and its retryable write. A statement the retried
// write already applied answers its recorded result (multi tells which statements may have
// applied in part); a failed one becomes a write error of the reply and, when ordered, ends
// the command. compile makes statement i's operation; add folds each statement that did not
// fail into the reply's counts.
func (h *Handlers) modifyEach(ctx context.Context, r *command.Request, a *WriteArgs, kind, list string,
	multi func(i int) bool, compile func(i int) (*write.Op, error), add func(i int, or *write.Result, res *write.Results)) (write.Results, error) {
	ctx, cancel := h.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	rt, release, err := h.CheckoutRetryable(r)
	if err != nil {
		return write.Results{}, err
	}
	defer release()
	res := write.Results{}
	for i := range a.Stmts {
		var or write.Result
		if rec, ok := command.Retried(rt, i, multi(i)); ok {
			or, err = rec, nil
		} else {
			var op *write.Op
			if op, err = compile(i); err == nil {
				op.Retry, op.Stmt = rt, int32(i)
				err = h.runWriteReplanning(ctx, r, op, &ModifyStmt{Kind: kind, list: list, stmt: a.Stmts[i], Index: int32(i)}, &or, !multi(i))
			}
		}
		r.Charge += or.Charge
		if or.Plan != nil {
			r.Plan = or.Plan
		}
		if err != nil {
			we, err := stmtWriteError(ctx, i, err)
			if err != nil {
				return res, err
			}
			res.Errs = append(res.Errs, we)
			if a.ordered {
				break
			}
			continue
		}
		add(i, &or, &res)
	}
	return res, nil
}

// replannings bounds how many times one statement plans again on a replaced collection.
const replannings = 4

// runWriteReplanning is runWrite, run again on the new collection when the collection was
// replaced by another of its name while the write waited for its locks (a layout change,
// exec/sharding/reshard.go), as mongos re-runs a write after StaleConfig. Only a statement
// of one document (single) runs again: it wrote nothing; a multi-document one may have
// written part of its documents before, and fails with the StaleConfig.
func (h *Handlers) runWriteReplanning(ctx context.Context, r *command.Request, op *write.Op, st *ModifyStmt, or *write.Result, single bool) error {
	for attempt := 0; ; attempt++ {
		err := h.runWrite(ctx, r, op, st, or)
		if !single || attempt == replannings || !write.IsReplaced(err) {
			return err
		}
		ci, lerr := h.Cat.Lookup(op.CI.Meta.DB, op.CI.Meta.Name)
		if lerr != nil || ci == nil {
			return err
		}
		op.CI = ci
		*or = write.Result{}
	}
}

// stmtWriteError turns the failure of statement i into its write error. A failure that is
// not MongoDB's (storage) fails the whole command instead, and so does an interruption
// (maxTimeMS, a client gone), as MongoDB's write commands fail on them whatever they applied.
func stmtWriteError(ctx context.Context, i int, err error) (mongoerr.WriteError, error) {
	if ctx.Err() != nil {
		return mongoerr.WriteError{}, command.InterruptError(ctx, err)
	}
	me := mongoerr.As(err)
	if me == nil || slices.Contains(me.Labels, "RetryableWriteError") ||
		me.Code == mongoerr.NotWritablePrimary || me.Code == mongoerr.InterruptedDueToReplStateChange {
		// An owner that cannot be reached (cluster mode) fails the command, whose label
		// tells the driver to retry it, as a failed insert does; so does a shard's leader
		// stepping down under it, as a stepdown interrupts a primary's write commands (a
		// router re-runs a retryable one once a new leader serves).
		return mongoerr.WriteError{}, err
	}
	return mongoerr.WriteError{Index: i, Err: me}, nil
}
