package route

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The router's side of writes on other nodes: an insert's documents for one node go as
// _cleaveShardWrite, a statement of an update, delete or findAndModify as
// _cleaveShardModify; the owner runs them through its own write path and answers the
// result, which the router merges with the other nodes'. The owner's side is
// exec/command/node's.

// Session is what a write on another node carries of its command: the database, and the
// session fields the owner records a retryable statement under (lsid, txnNumber) and the
// write concern (body: the command's, whose fields are copied).
type Session struct {
	DB   string
	Body bsoncore.Document
}

// fields appends the fields of s's body named keys to b, and reports whether txnNumber was
// one of them (the statement is retryable).
func (s Session) fields(b *bsoncore.DocumentBuilder, keys ...string) (retryable bool) {
	for _, k := range keys {
		if v, err := s.Body.LookupErr(k); err == nil {
			b.AppendValue(k, v)
			retryable = retryable || k == "txnNumber"
		}
	}
	return retryable
}

// Insert inserts docs (their statement ids stmts) into ci on the node owning shard, which
// runs them through its write path (ordered: stopping at the first error), and adds the
// result to res. An owner that answered StaleConfig wrote none of them: each is refused
// with it, for the router to route again.
func (rs *Nodes) Insert(ctx context.Context, shard int, ci *catalog.Coll, s Session, docs []bsoncore.Value, stmts []int,
	ordered, bypass bool, res *write.Results,
) error {
	b := bsoncore.NewDocumentBuilder().
		AppendString("_cleaveShardWrite", ci.Meta.Name).
		AppendInt64("collId", int64(ci.Meta.ID)).
		AppendInt64("rev", rs.records.Revision())
	da, sa := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	for i, v := range docs {
		da.AppendDocument(v.Data)
		sa.AppendInt32(int32(stmts[i]))
	}
	b.AppendArray("documents", da.Build()).AppendArray("stmts", sa.Build()).
		AppendBoolean("ordered", ordered).AppendBoolean("bypassDocumentValidation", bypass)
	retryable := s.fields(b, "writeConcern", "lsid", "txnNumber")
	reply, err := rs.Command(ctx, shard, b.AppendString("$db", s.DB).Build())
	if IsStale(err) {
		for _, st := range stmts {
			res.Errs = append(res.Errs, mongoerr.WriteError{Index: st, Err: mongoerr.As(err)})
		}
		return nil
	}
	if err != nil {
		return retryableUnreachable(err, retryable)
	}
	n, _ := reply.Lookup("n").AsInt64OK()
	res.N += n
	charge, _ := reply.Lookup("charge").DoubleOK()
	res.Charge += charge
	res.Errs = append(res.Errs, decodeWriteErrors(reply)...)
	return nil
}

// retryableUnreachable labels a node that cannot be reached RetryableWriteError for a
// retryable write: the driver may send it again, and its record makes the retry safe.
func retryableUnreachable(err error, retryable bool) error {
	if me := mongoerr.As(err); me != nil && me.Code == mongoerr.HostUnreachable && retryable {
		_ = me.WithLabels("RetryableWriteError")
	}
	return err
}

// IsStale reports whether err is StaleConfig: the owner's map of the shard differs from the
// router's, and it did nothing.
func IsStale(err error) bool {
	me := mongoerr.As(err)
	return me != nil && me.Code == mongoerr.StaleConfig
}

// decodeWriteErrors reads the writeErrors of a write reply, keeping the fields beyond
// index, code, codeName and errmsg (keyPattern, keyValue, errInfo) as the error's Info
// (mongoerr.FromReply).
func decodeWriteErrors(reply bsoncore.Document) []mongoerr.WriteError {
	arr, ok := reply.Lookup("writeErrors").ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	out := make([]mongoerr.WriteError, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			continue
		}
		idx, _ := d.Lookup("index").AsInt64OK()
		out = append(out, mongoerr.WriteError{Index: int(idx), Err: mongoerr.FromReply(d)})
	}
	return out
}

// Modes of _cleaveShardModify.
const (
	ModifyRun    = "run"    // the statement, restricted to shards and ranges
	ModifyTarget = "target" // the statement, on the one document at hash and id
	ModifyProbe  = "probe"  // only the retryable-write record of the statement, if any
)

// Modify is one statement of an update ("updates"), delete or findAndModify as an owner
// runs it with _cleaveShardModify.
type Modify struct {
	CI   *catalog.Coll
	Kind string            // "update", "delete" or "findAndModify"
	Cmd  bsoncore.Document // the one-statement command
	// Index is the statement's id; Mode one of the modes above, with Upsert allowed (run).
	Index  int32
	Mode   string
	Upsert bool
	// Shards and Ranges restrict a run to the owner's shards and the router's hash ranges;
	// Hash and ID name a target's document.
	Shards []int
	Ranges [][2]uint64
	Hash   uint64
	ID     []byte
}

// Modify runs m on the node owning shard and adds its result to res; executed reports
// that the owner had run the statement before (a retry answered from its record).
func (rs *Nodes) Modify(ctx context.Context, shard int, s Session, m *Modify, res *write.Result) (executed bool, err error) {
	ci := m.CI
	b := bsoncore.NewDocumentBuilder().
		AppendString("_cleaveShardModify", ci.Meta.Name).
		AppendInt64("collId", int64(ci.Meta.ID)).
		AppendInt64("rev", rs.records.Revision()).
		AppendString("kind", m.Kind).
		AppendDocument("cmd", m.Cmd).
		AppendInt32("index", m.Index).
		AppendString("mode", m.Mode).
		AppendBoolean("upsert", m.Upsert)
	if m.Mode == ModifyRun {
		shards := bsoncore.NewArrayBuilder()
		for _, s := range m.Shards {
			shards.AppendInt32(int32(s))
		}
		b.AppendArray("shards", shards.Build()).AppendArray("ranges", query.EncodeRanges(m.Ranges))
	}
	if m.ID != nil {
		b.AppendInt64("hash", int64(m.Hash)).AppendBinary("id", 0, m.ID)
	}
	retryable := s.fields(b, "lsid", "txnNumber")
	reply, err := rs.Command(ctx, shard, b.AppendString("$db", s.DB).Build())
	if err != nil {
		return false, retryableUnreachable(err, retryable)
	}
	return mergeModifyReply(reply, res), nil
}

// mergeModifyReply adds the result of an owner's _cleaveShardModify or _cleaveShardUpdate
// reply to res, and reports whether the owner had executed the statement before.
func mergeModifyReply(reply bsoncore.Document, res *write.Result) (executed bool) {
	n, _ := reply.Lookup("n").AsInt64OK()
	nm, _ := reply.Lookup("nModified").AsInt64OK()
	charge, _ := reply.Lookup("charge").DoubleOK()
	res.Matched += n
	res.Modified += nm
	res.Charge += charge
	if v, err := reply.LookupErr("upserted"); err == nil {
		res.Upserted = v
	}
	if d, ok := reply.Lookup("before").DocumentOK(); ok {
		res.Before = d
	}
	if d, ok := reply.Lookup("after").DocumentOK(); ok {
		res.After = d
	}
	executed, _ = reply.Lookup("executed").BooleanOK()
	return executed
}
