package node

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/command/crud"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// shardModify runs, on this node, a statement of an update, delete or findAndModify that
// another node routed here (crud's remote_modify.go): {_cleaveShardModify: coll, collId, rev,
// kind, cmd (the one-statement command), index (its statement id), mode, upsert, and
// shards and ranges (mode run) or hash and id (mode target), lsid, txnNumber}. It answers
// {n, nModified, upserted, before, after, charge, executed}; a failed statement answers
// its error, which the router reports as the statement's.
func (h *Handlers) shardModify(ctx context.Context, r *command.Request) error {
	ci, err := h.ownedColl(ctx, r, -1)
	if err != nil {
		return err
	}
	b := r.Body
	kind, _ := b.Lookup("kind").StringValueOK()
	cmd, _ := b.Lookup("cmd").DocumentOK()
	index, _ := b.Lookup("index").Int32OK()
	mode, _ := b.Lookup("mode").StringValueOK()
	op, err := h.compileModify(r.DB, kind, cmd, ci)
	if err != nil {
		return err
	}
	rt, release, err := h.CheckoutRetryable(r)
	if err != nil {
		return err
	}
	defer release()
	res := write.Result{}
	rec, executed := command.Retried(rt, int(index), op.Multi)
	op.Retry, op.Stmt = rt, index
	switch {
	case executed:
		res = rec
	case mode == route.ModifyProbe:
	case mode == route.ModifyTarget:
		hash, _ := b.Lookup("hash").Int64OK()
		_, id, _ := b.Lookup("id").BinaryOK()
		err = h.Write.RunTarget(ctx, op, uint64(hash), id, &res)
	case mode == route.ModifyRun:
		if op.Shards, err = h.ownedTargets(op, b); err != nil {
			return err
		}
		upsert, _ := b.Lookup("upsert").BooleanOK()
		op.Upsert = op.Upsert && upsert
		err = h.RunLocal(ctx, r, op, &crud.ModifyStmt{Kind: kind, Index: index, CI: ci, Cmd: cmd}, &res)
	default:
		return mongoerr.New(mongoerr.BadValue, "_cleaveShardModify: unknown mode %q", mode)
	}
	r.Charge += res.Charge
	if err != nil {
		return err
	}
	r.Wrote = true
	if !executed {
		h.countModify(kind, op, &res)
	}
	r.Out = appendModifyResult(r.Out, &res, executed)
	return nil
}

// compileModify compiles the one statement of cmd, a command of kind, on collection ci.
func (h *Handlers) compileModify(db, kind string, cmd bsoncore.Document, ci *catalog.Coll) (*write.Op, error) {
	switch kind {
	case "update":
		a, err := crud.ParseWriteArgs(kind, "updates", cmd)
		if err != nil {
			return nil, err
		}
		s, err := crud.ParseUpdateStmt(0, a.Stmts[0])
		if err != nil {
			return nil, err
		}
		return h.CompileUpdate(db, a, ci, s, false)
	case "delete":
		a, err := crud.ParseWriteArgs(kind, "deletes", cmd)
		if err != nil {
			return nil, err
		}
		s, err := crud.ParseDeleteStmt(0, a.Stmts[0])
		if err != nil {
			return nil, err
		}
		return crud.CompileDelete(a, ci, s)
	case "findAndModify":
		a, err := crud.ParseFAM(cmd)
		if err != nil {
			return nil, err
		}
		op, _, err := h.CompileFAM(db, a, ci, false)
		return op, err
	}
	return nil, mongoerr.New(mongoerr.BadValue, "_cleaveShardModify: unknown kind %q", kind)
}

// ownedTargets returns the shards a mode-run request names after checking that they are
// this node's and that the statement targets the same ranges on them here as on the
// router (StaleConfig otherwise: the router refreshes its map).
func (h *Handlers) ownedTargets(op *write.Op, b bsoncore.Document) ([]int, error) {
	sa, _ := b.Lookup("shards").ArrayOK()
	vals, _ := sa.Values()
	all := h.Cat.Shards()
	shards := make([]int, 0, len(vals))
	for _, v := range vals {
		s := int(v.AsInt32())
		if s < 0 || s >= len(all) {
			return nil, mongoerr.New(mongoerr.StaleConfig, "shard %d is unknown to this node", s)
		}
		if node, remote := all[s].Node(); remote {
			return nil, mongoerr.New(mongoerr.StaleConfig, "shard %d is on node %s, not this one", s, route.NodeName(node))
		}
		shards = append(shards, s)
	}
	want, ok := query.DecodeRanges(b.Lookup("ranges").Array())
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "_cleaveShardModify: malformed ranges")
	}
	var got [][2]uint64
	for _, p := range h.NodeParts(op.CI, op.Filter, func(s int) bool { return slices.Contains(shards, s) }) {
		got = append(got, p.Ranges...)
	}
	if !slices.Equal(got, want) {
		return nil, mongoerr.New(mongoerr.StaleConfig, "shard version mismatch for %s: the shard's ranges differ", op.CI.NS())
	}
	return shards, nil
}

// countModify counts what a routed statement did in serverStatus' document counters.
func (h *Handlers) countModify(kind string, op *write.Op, res *write.Result) {
	switch {
	case kind == "delete" || kind == "findAndModify" && op.Upd == nil:
		h.Counters.DeletedDocs.Add(res.Matched)
	default:
		h.Counters.UpdatedDocs.Add(res.Modified)
	}
	if res.Upserted.Type != 0 {
		h.Counters.InsertedDocs.Add(1)
	}
}

// appendModifyResult appends the reply fields of shardModify.
func appendModifyResult(dst []byte, res *write.Result, executed bool) []byte {
	dst = bsoncore.AppendInt64Element(dst, "n", res.Matched)
	dst = bsoncore.AppendInt64Element(dst, "nModified", res.Modified)
	if res.Upserted.Type != 0 {
		dst = bsoncore.AppendValueElement(dst, "upserted", res.Upserted)
	}
	if res.Before != nil {
		dst = bsoncore.AppendDocumentElement(dst, "before", res.Before)
	}
	if res.After != nil {
		dst = bsoncore.AppendDocumentElement(dst, "after", res.After)
	}
	dst = bsoncore.AppendDoubleElement(dst, "charge", res.Charge)
	return bsoncore.AppendBooleanElement(dst, "executed", executed)
}
