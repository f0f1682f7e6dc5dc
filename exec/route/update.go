package route

import (
	"context"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A single-document update whose targets are one partition on another node's shard, with
// nothing but a filter and an update document (no upsert, multi, arrayFilters, collation,
// hint, let or constants, outside a transaction: workload a's $set by _id), goes as a
// compact request, _cleaveShardUpdate (ShardUpdate): the namespace, the collection's id, the
// catalog revision the router planned on, the shard and the range of the partition it
// targeted there, the statement's filter and update and its id, whether the write concern
// asks for a synced commit, and the session fields of a retryable write. The owner answers
// it as a Direct command (none of a client command's steps), without re-parsing a command:
// the staleness checks of _cleaveShardModify (the collection's id, the shard this node's, the
// partition the same on it), the retryable-write record of the statement (a retry answers
// it, exactly once across a router's retries), then the write path as for any update. Its
// reply has _cleaveShardModify's shape: {n, nModified, charge, executed}. Anything else
// takes _cleaveShardModify.

// UpdateCommand names the compact update request.
const UpdateCommand = "_cleaveShardUpdate"

// ShardUpdate is a compact update: statement Stmt ({q: Q, u: U}) of a single-document
// update of collection DB.Coll (id CollID), on the partition [Lo, Hi) of shard Shard.
type ShardUpdate struct {
	catalog.CompactHead // where it goes, and the router's catalog revision
	Lo, Hi              uint64
	Q, U                bsoncore.Document
	Stmt                int32
	Sync                bool // the write concern asks for a synced commit
	// LSID and TxnNumber are a retryable write's session fields (LSID nil: not retryable).
	LSID      bsoncore.Document
	TxnNumber int64
}

// AppendShardUpdate appends u as a _cleaveShardUpdate command.
//
//	{_cleaveShardUpdate: "c", collId: 7, rev: 42, shard: 1, lo: <int64 bits>, hi: <int64 bits>,
//	 q: {_id: 5}, u: {$set: {v: 1}}, stmt: 0, sync: true, lsid: {id: …}, txnNumber: 3, $db: "db"}
func AppendShardUpdate(dst []byte, u *ShardUpdate) []byte {
	idx, dst := catalog.AppendCompactStart(dst, UpdateCommand, &u.CompactHead)
	dst = bsoncore.AppendInt64Element(dst, "lo", int64(u.Lo))
	dst = bsoncore.AppendInt64Element(dst, "hi", int64(u.Hi))
	dst = bsoncore.AppendDocumentElement(dst, "q", u.Q)
	dst = bsoncore.AppendDocumentElement(dst, "u", u.U)
	dst = bsoncore.AppendInt32Element(dst, "stmt", u.Stmt)
	dst = bsoncore.AppendBooleanElement(dst, "sync", u.Sync)
	if u.LSID != nil {
		dst = bsoncore.AppendDocumentElement(dst, "lsid", u.LSID)
		dst = bsoncore.AppendInt64Element(dst, "txnNumber", u.TxnNumber)
	}
	return catalog.AppendCompactEnd(dst, idx, &u.CompactHead)
}

// updateFields are the bits of the fields of its own ParseShardUpdate requires.
const updateFields = 1<<6 - 1

// ParseShardUpdate is AppendShardUpdate's inverse, in one pass over body (extra fields, such
// as the priority, are ignored); a missing or mistyped field is BadValue.
func ParseShardUpdate(body bsoncore.Document) (ShardUpdate, error) {
	var u ShardUpdate
	if err := catalog.DecodeCompact(body, UpdateCommand, &u.CompactHead, updateFields, u.setField); err != nil {
		return u, err
	}
	if u.LSID == nil && u.TxnNumber != 0 {
		return u, mongoerr.New(mongoerr.BadValue, "%s: txnNumber without lsid", UpdateCommand)
	}
	return u, nil
}

// setField sets the field of u that e holds, returning its bit among the required fields
// (0: optional or unknown) and false when e's value has the wrong type.
func (u *ShardUpdate) setField(e bsoncore.Element) (bit uint16, ok bool) {
	ok, v := true, e.Value()
	switch e.Key() {
	case "lo":
		var x int64
		x, ok = v.Int64OK()
		u.Lo, bit = uint64(x), 1
	case "hi":
		var x int64
		x, ok = v.Int64OK()
		u.Hi, bit = uint64(x), 2
	case "q":
		u.Q, ok = v.DocumentOK()
		bit = 4
	case "u":
		u.U, ok = v.DocumentOK()
		bit = 8
	case "stmt":
		u.Stmt, ok = v.Int32OK()
		bit = 16
	case "sync":
		u.Sync, ok = v.BooleanOK()
		bit = 32
	case "lsid":
		u.LSID, ok = v.DocumentOK()
	case "txnNumber":
		u.TxnNumber, ok = v.Int64OK()
	}
	return bit, ok
}

// UpdateCounts are a node's compact updates: sent to other nodes, and served for them.
type UpdateCounts struct {
	Sent, Served int64
}

// updateCounters count a node's compact updates (UpdateCounts).
type updateCounters struct {
	sent, served atomic.Int64
}

// CompactUpdates returns the node's compact updates so far.
func (rs *Nodes) CompactUpdates() UpdateCounts {
	return UpdateCounts{Sent: rs.updates.sent.Load(), Served: rs.updates.served.Load()}
}

// NoteUpdateServed counts a compact update this node served for another node.
func (rs *Nodes) NoteUpdateServed() { rs.updates.served.Add(1) }

// Update runs u on the node owning its shard and adds its result to res; executed reports
// that the owner had run the statement before (a retry answered from its record). A node
// that cannot be reached fails a retryable statement with the RetryableWriteError label, as
// Modify does.
func (rs *Nodes) Update(ctx context.Context, u *ShardUpdate, res *write.Result) (executed bool, err error) {
	u.Rev = rs.records.Revision()
	cmd := AppendShardUpdate(make([]byte, 0, 128+len(u.Coll)+len(u.DB)+len(u.Q)+len(u.U)+len(u.LSID)), u)
	rs.updates.sent.Add(1)
	reply, err := rs.Command(ctx, u.Shard, cmd)
	if err != nil {
		return false, retryableUnreachable(err, u.LSID != nil)
	}
	return mergeModifyReply(reply, res), nil
}
