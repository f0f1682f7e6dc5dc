package crud

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/write"
)

// Compact updates (route.ShardUpdate): a statement of an update command that is nothing but
// {q, u} with u a document, single, no upsert, in a command without let or the bypass
// options, whose targets are one partition of one other node's shard, is sent as
// _cleaveShardUpdate rather than as _cleaveShardModify's one-statement command; its owner
// compiles q and u (CompileShardUpdate) and runs the write path as for any update. Anything
// else goes the full way (remote_modify.go).

// compactUpdate returns the compact request of statement ms of r, compiled as op, on node
// part p, or nil when it does not qualify.
func compactUpdate(r *command.Request, op *write.Op, ms *ModifyStmt, p *NodePart) *route.ShardUpdate {
	if ms.Kind != "update" || ms.Cmd != nil || op.Upsert || op.Multi || op.CI == nil ||
		len(p.shards) != 1 || len(p.Ranges) != 1 {
		return nil
	}
	q, u, ok := plainUpdateStmt(ms.stmt)
	if !ok {
		return nil
	}
	for _, k := range [...]string{"let", "bypassDocumentValidation", "bypassEmptyTsReplacement"} {
		if _, err := r.Body.LookupErr(k); err == nil {
			return nil
		}
	}
	us := &route.ShardUpdate{CompactHead: catalog.CompactHead{DB: r.DB, Coll: op.CI.Meta.Name, CollID: int64(op.CI.Meta.ID), Shard: p.shard},
		Lo: p.Ranges[0][0], Hi: p.Ranges[0][1], Q: q, U: u, Stmt: ms.Index, Sync: op.Sync}
	if txn, ok := r.Body.Lookup("txnNumber").Int64OK(); ok {
		lsid, ok := r.Body.Lookup("lsid").DocumentOK()
		if !ok {
			return nil
		}
		us.LSID, us.TxnNumber = lsid, txn
	}
	return us
}

// plainUpdateStmt returns the filter and update document of statement stmt when it has no
// other field than q, u, and multi and upsert false.
func plainUpdateStmt(stmt bsoncore.Value) (q, u bsoncore.Document, ok bool) {
	d, ok := stmt.DocumentOK()
	if !ok {
		return nil, nil, false
	}
	for rem := d[4 : len(d)-1]; len(rem) > 0; {
		e, rest, ok := bsoncore.ReadElement(rem)
		if !ok {
			return nil, nil, false
		}
		rem = rest
		v := e.Value()
		switch e.Key() {
		case "q":
			q, ok = v.DocumentOK()
		case "u":
			u, ok = v.DocumentOK()
		case "multi", "upsert":
			b, isBool := v.BooleanOK()
			ok = isBool && !b
		default:
			ok = false
		}
		if !ok {
			return nil, nil, false
		}
	}
	return q, u, q != nil && u != nil
}

// CompileShardUpdate compiles the statement of a compact update, {q, u} on collection ci
// of database db, as CompileUpdate compiles it in a command: sync is its write concern's.
func (h *Handlers) CompileShardUpdate(db string, ci *catalog.Coll, q, u bsoncore.Document, sync bool) (*write.Op, error) {
	a := &WriteArgs{coll: ci.Meta.Name}
	s := &UpdateStmt{q: q, u: bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: u}}
	op, err := h.CompileUpdate(db, a, ci, s, false)
	if err != nil {
		return nil, err
	}
	op.Sync = sync
	return op, nil
}
