package crud

import (
	"bytes"
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/js"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/update"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// update runs the update command: each statement of updates in turn, stopping at the first
// failed one when ordered. A statement's failure is a write error of the reply; only a
// malformed command fails as a whole.
func (h *Handlers) update(ctx context.Context, r *command.Request) error {
	const cmd = "update"
	a, err := ParseWriteArgs(cmd, "updates", r.Body)
	if err != nil {
		return err
	}
	stmts := make([]*UpdateStmt, len(a.Stmts))
	for i, v := range a.Stmts {
		if stmts[i], err = ParseUpdateStmt(i, v); err != nil {
			return err
		}
	}
	ci, err := h.Cat.Lookup(r.DB, a.coll)
	if err != nil {
		return err
	}
	if explainOnly(r) {
		op, err := h.CompileUpdate(r.DB, a, ci, stmts[0], false)
		if err != nil {
			return err
		}
		return h.explainWrite(ctx, r, op)
	}
	var upserts int64
	res, err := h.modifyEach(ctx, r, a, cmd, "updates",
		func(i int) bool { return stmts[i].multi },
		func(i int) (*write.Op, error) {
			op, err := h.CompileUpdate(r.DB, a, ci, stmts[i], true)
			if err == nil {
				ci = op.CI // an upsert created the collection: later statements find it
			}
			return op, err
		},
		func(i int, or *write.Result, res *write.Results) {
			res.N += or.Matched
			res.NModified += or.Modified
			if or.Upserted.Type != 0 {
				res.N++
				upserts++
				res.Upserted = append(res.Upserted, write.Upsert{Index: i, ID: or.Upserted})
			}
		})
	if err != nil {
		return err
	}
	if r.DB == "config" && a.coll == "collections" && res.NModified > 0 {
		// sh.disableBalancing() and sh.enableBalancing() write noBalance here: the catalog
		// takes it, then the derived documents are written again from it.
		if err := h.Shards.AdoptConfigCollections(); err != nil {
			return err
		}
	}
	h.Counters.UpdatedDocs.Add(res.NModified)
	h.Counters.InsertedDocs.Add(upserts)
	r.Out = res.AppendReply(r.Out, true)
	return nil
}

// CompileUpdate compiles update statement s of collection a.coll (ci, nil when it does not
// exist; an upsert creates it unless only explaining).
func (h *Handlers) CompileUpdate(db string, a *WriteArgs, ci *catalog.Coll, s *UpdateStmt, create bool) (*write.Op, error) {
	coll, err := CollationFor(s.collation, ci)
	if err != nil {
		return nil, err
	}
	f, err := compileWriteFilter(s.q, a.let, coll)
	if err != nil {
		return nil, err
	}
	opts := write.UpdateOptions(s.u, s.arrayFilters, a.let, s.c, updateFunctionHook(s.u, a.maxTimeMS))
	opts.Timestamp, opts.KeepEmptyTimestamps, opts.Collator = h.Clock.Timestamp, a.bypassTs, coll
	u, err := update.CompileValue(s.u, opts)
	if err != nil {
		return nil, err
	}
	if s.multi && u.IsReplacement() {
		return nil, mongoerr.New(mongoerr.FailedToParse, "multi update is not supported for replacement-style update")
	}
	if ci == nil && s.upsert && create {
		if ci, err = h.Cat.ForWrite(db, a.coll); err != nil {
			return nil, err
		}
	}
	q := s.q
	if q == nil {
		q = query.EmptyDoc
	}
	op := &write.Op{
		CI: ci, Query: q, Filter: f, Hint: s.hint, Upd: u,
		Multi: s.multi, Upsert: s.upsert, Sync: a.wc.Sync(), Bypass: a.bypass,
	}
	if err := op.CheckUpdateTarget(s.u); err != nil {
		return nil, err
	}
	return op, nil
}

// compileWriteFilter compiles the query of a write statement (or a find); $expr in it
// sees the command's let variables; strings compare with collation coll (nil: simple).
func compileWriteFilter(q, let bsoncore.Document, coll bsonx.Collator) (*match.Filter, error) {
	return query.CompileFilterWith(q, let, coll)
}

// compileFilterTimed is compileWriteFilter whose $where stops at the command's maxTimeMS
// (0: none) from now, or when ctx ends, and so does its $function. A filter whose bytes spell
// neither "$where" nor "$function" gets no scope: it was an allocation of every point read.
func compileFilterTimed(ctx context.Context, q, let bsoncore.Document, coll bsonx.Collator, maxTimeMS int64) (*match.Filter, error) {
	return compileFilterTimedInto(ctx, q, let, coll, maxTimeMS, nil)
}

// compileFilterTimedInto is compileFilterTimed that builds a one-equality filter in sc (nil:
// allocated; query.CompileFilterInto).
func compileFilterTimedInto(ctx context.Context, q, let bsoncore.Document, coll bsonx.Collator, maxTimeMS int64, sc *match.Scratch) (*match.Filter, error) {
	var scope *js.Scope
	if bytes.Contains(q, dollarWhere) || bytes.Contains(q, dollarFunction) {
		scope = js.NewScope(ctx, time.Duration(maxTimeMS)*time.Millisecond)
	}
	return query.CompileFilterInto(q, let, coll, scope, sc)
}

// updateFunctionHook returns the JavaScript hook of update u's pipeline, bounded by the
// command's maxTimeMS (0: none) from now; nil when u is no pipeline or names no $function,
// which spares every other update a scope. With JavaScript switched off $function answers
// as a mongod without a script engine.
func updateFunctionHook(u bsoncore.Value, maxTimeMS int64) expr.FunctionHook {
	if u.Type != bsoncore.TypeArray || !bytes.Contains(u.Data, dollarFunction) {
		return nil
	}
	return query.FunctionHook(js.NewScope(context.Background(), time.Duration(maxTimeMS)*time.Millisecond))
}

// dollarWhere is what a filter holding $where contains.
var dollarWhere = []byte("$where")

// dollarFunction is what a filter whose $expr calls $function contains.
var dollarFunction = []byte("$function")

// explainWrite explains the read part of a write (update, delete, findAndModify): how op
// finds its documents. It writes nothing; explain.go owns the output's shape.
func (h *Handlers) explainWrite(ctx context.Context, r *command.Request, op *write.Op) error {
	q := &query.Query{CI: op.CI, Filter: op.Filter, Sort: op.Sort, Hint: op.Hint}
	limit := int64(0)
	if !op.Multi {
		limit = 1
	}
	return h.explainQuery(ctx, r, q, r.Name, limit)
}
