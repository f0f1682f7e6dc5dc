package exec

import (
	"context"
	"time"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// afterTxnStatement aborts the transaction of a statement that failed (err, or writeErrors
// in its reply), as MongoDB does, and returns the statement's error. As in MongoDB, a
// transient error (a write conflict) fails the whole command, with its label, rather than
// being one of its writeErrors.
func afterTxnStatement(r *command.Request, err error) error {
	if r.Txn == nil || r.Name == "commitTransaction" || r.Name == "abortTransaction" {
		return err
	}
	if err != nil {
		r.Txn.Abort()
		return err
	}
	code, found := replyWriteError(r.Out)
	if !found {
		return nil
	}
	r.Txn.Abort()
	if code == int32(mongoerr.WriteConflict) {
		return txn.ErrWriteConflict()
	}
	return nil
}

// replyWriteError reports whether the reply being built (an open document) holds
// writeErrors, and the code of the first.
func replyWriteError(out []byte) (code int32, found bool) {
	if len(out) < 4 {
		return 0, false
	}
	doc := make([]byte, len(out)+1)
	copy(doc, out)
	bsoncore.UpdateLength(doc, 0, int32(len(doc)))
	v, err := bsoncore.Document(doc).LookupErr("writeErrors", "0", "code")
	if err != nil {
		_, err = bsoncore.Document(doc).LookupErr("writeErrors")
		return 0, err == nil
	}
	code, _ = v.Int32OK()
	return code, true
}

// checkTxnCommand refuses what a transaction may not do of the commands it may run:
// aggregate's $out and $merge, and createIndexes on an existing collection (MongoDB allows
// create and createIndexes on a new collection only; they run at once, outside the
// transaction).
func (e *Executor) checkTxnCommand(r *command.Request) error {
	if r.Txn == nil {
		return nil
	}
	if r.Name == "aggregate" {
		arr, _ := r.Body.Lookup("pipeline").ArrayOK()
		vals, _ := arr.Values()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				if first, ok := bsonx.FirstElement(d); ok && (first.Key() == "$out" || first.Key() == "$merge") {
					return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "%s cannot be used in a transaction", first.Key())
				}
			}
		}
		return nil
	}
	if r.Name != "createIndexes" {
		return nil
	}
	coll, _ := r.Body.Lookup("createIndexes").StringValueOK()
	if ci, _ := e.Cat.Lookup(r.DB, coll); ci != nil && !r.Txn.Created(r.DB, coll) {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction,
			"Cannot create new indexes on existing collection %s.%s in a multi-document transaction.", r.DB, coll)
	}
	return nil
}

// trackTxnDDL notes, around a statement of a transaction, whether it created the collection
// it names; call the returned function once the statement ran.
func (e *Executor) trackTxnDDL(r *command.Request) func() {
	if r.Txn == nil || !r.Cmd.Has(command.TxnCreates) || e.Cat == nil {
		return func() {}
	}
	first, _ := r.Body.Elements()
	if len(first) == 0 {
		return func() {}
	}
	name, ok := first[0].Value().StringValueOK()
	if !ok || e.Storage.Catalog.State().Collection(r.DB, name) != nil {
		return func() {}
	}
	return func() {
		if c := e.Storage.Catalog.State().Collection(r.DB, name); c != nil {
			r.Txn.NoteCreated(r.DB, name, c.ID)
		}
	}
}

// enterSnapshotRead sets r.snap for a snapshot read outside a transaction; release drops
// the command's reference (its cursor keeps its own).
func (e *Executor) enterSnapshotRead(r *command.Request) (release func(), err error) {
	snapshot, at, hasAt, err := txn.ReadConcernSnapshot(r.Generic(command.GenReadConcern))
	// A cursor reads the snapshot it was opened on: the driver sends the session's
	// readConcern with getMore and killCursors too.
	if err != nil || !snapshot || r.Txn != nil || e.Cat == nil || r.Name == "getMore" || r.Name == "killCursors" {
		return func() {}, err
	}
	if !r.Cmd.Has(command.SnapshotRead) {
		return nil, mongoerr.New(mongoerr.InvalidOptions,
			"Command %s does not support { readConcern: { level: \"snapshot\", provenance: \"clientSupplied\" } } :: caused by :: read concern not supported", r.Name)
	}
	ent, err := e.Snapshots.Acquire(at, hasAt, time.Now())
	if err != nil {
		return nil, err
	}
	r.Snap = ent
	return ent.Release, nil
}

// appendAtClusterTime adds the time of r's snapshot read to its reply (the open document
// out, started at idx): in the cursor document of find and aggregate, at the top level of
// distinct's, where drivers look for it.
func appendAtClusterTime(r *command.Request, out []byte, idx int) []byte {
	if r.Snap == nil {
		return out
	}
	t := r.Snap.At
	if r.Name == "distinct" {
		return bsoncore.AppendTimestampElement(out, "atClusterTime", uint32(t>>32), uint32(t))
	}
	doc := make(bsoncore.Document, len(out)-idx+1)
	copy(doc, out[idx:])
	bsoncore.UpdateLength(doc, 0, int32(len(doc)))
	elems, err := doc.Elements()
	if err != nil {
		return out
	}
	out = out[:idx+4]
	for _, el := range elems {
		cur, ok := el.Value().DocumentOK()
		if el.Key() != "cursor" || !ok {
			out = append(out, el...)
			continue
		}
		cidx, o := bsoncore.AppendDocumentElementStart(out, "cursor")
		celems, _ := cur.Elements()
		for _, ce := range celems {
			o = append(o, ce...)
			if k := ce.Key(); k == "firstBatch" || k == "nextBatch" {
				o = bsoncore.AppendTimestampElement(o, "atClusterTime", uint32(t>>32), uint32(t))
			}
		}
		out, _ = bsoncore.AppendDocumentEnd(o, cidx)
	}
	return out
}

// enterTxn checks out the session of a command that carries autocommit (a statement of a
// transaction) and sets r.Txn; release checks the session back in (session.Cache.EnterTxn).
func (e *Executor) enterTxn(r *command.Request) (release func(), err error) {
	autocommit, startTxn := r.Generic(command.GenAutocommit), r.Generic(command.GenStartTxn)
	if autocommit.Type == 0 && startTxn.Type == 0 { // no statement of a transaction: most commands
		return func() {}, nil
	}
	tx, release, err := e.Sessions.EnterTxn(&session.Statement{
		Name: r.Name, Body: r.Body, InTxn: r.Cmd.Has(command.InTxn), Storage: e.Cat != nil,
		Autocommit: autocommit, StartTxn: startTxn, TxnNumber: r.Generic(command.GenTxnNumber),
	}, e.Txns, e.Write)
	if err != nil {
		return nil, err
	}
	r.Txn = tx
	return release, nil
}

// forwardTxn runs r, a statement of a transaction, on the node the transaction runs on when
// that is another node (route.Router.ForwardTxn), and reports whether it did: the other
// node's reply becomes r's (its operationTime too; its cluster time is gossiped), its error
// r's error.
func (e *Executor) forwardTxn(ctx context.Context, r *command.Request) (bool, error) {
	if e.Remote == nil || r.Generic(command.GenAutocommit).Type == 0 {
		return false, nil
	}
	txnNumber, _ := r.Generic(command.GenTxnNumber).AsInt64OK()
	start, _ := r.Generic(command.GenStartTxn).BooleanOK()
	reply, forwarded, err := e.Route.ForwardTxn(ctx, route.TxnStatement{LSID: r.Generic(command.GenLSID),
		TxnNumber: txnNumber, Start: start, Name: r.Name, DB: r.DB, Body: r.Body, Owner: e.SessionUser(r).UID()})
	if !forwarded || err != nil {
		return forwarded, err
	}
	elems, _ := reply.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "ok":
		case "$clusterTime":
			_ = e.Clock.Gossip(el.Value(), bsoncore.Value{})
		case "operationTime":
			if t, i, ok := el.Value().TimestampOK(); ok {
				r.OperationTime = uint64(t)<<32 | uint64(i)
			}
		default:
			r.Out = append(r.Out, el...)
		}
	}
	return true, nil
}
