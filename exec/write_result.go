package exec

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// writeConcern is what cleave honours of a write concern: whether the client waits for
// durability. Replication-related fields (w: "majority", wtimeout) are accepted as a
// standalone mongos accepts them.
type writeConcern struct {
	unacknowledged bool // w: 0
	noJournal      bool // j: false
}

// sync reports whether a write must be synced to the WAL before it is acknowledged.
func (wc writeConcern) sync() bool { return !wc.unacknowledged && !wc.noJournal }

// parseWriteConcern reads the writeConcern generic argument of a write command.
func parseWriteConcern(body bsoncore.Document) writeConcern {
	var wc writeConcern
	d, ok := body.Lookup("writeConcern").DocumentOK()
	if !ok {
		return wc
	}
	if w, err := d.LookupErr("w"); err == nil {
		if n, ok := w.AsInt64OK(); ok && n == 0 {
			wc.unacknowledged = true
		}
	}
	if j, ok := d.Lookup("j").BooleanOK(); ok && !j {
		wc.noJournal = true
	}
	return wc
}

// upserted is one document an update inserted: its statement index and _id.
type upserted struct {
	index int
	id    bsoncore.Value
}

// writeResult accumulates the outcome of a write command's statements.
type writeResult struct {
	n         int64 // inserted, matched (update) or deleted documents
	nModified int64
	upserted  []upserted
	errs      []mongoerr.WriteError
}

// appendReply appends n, nModified (for updates), upserted and writeErrors to the reply.
func (res *writeResult) appendReply(r *request, update bool) error {
	r.out = bsoncore.AppendInt32Element(r.out, "n", int32(res.n))
	if update {
		r.out = bsoncore.AppendInt32Element(r.out, "nModified", int32(res.nModified))
	}
	if len(res.upserted) > 0 {
		aidx, out := bsoncore.AppendArrayElementStart(r.out, "upserted")
		for i, u := range res.upserted {
			didx, o := bsoncore.AppendDocumentElementStart(out, strconv.Itoa(i))
			o = bsoncore.AppendInt32Element(o, "index", int32(u.index))
			o = bsoncore.AppendValueElement(o, "_id", u.id)
			out, _ = bsoncore.AppendDocumentEnd(o, didx)
		}
		r.out, _ = bsoncore.AppendArrayEnd(out, aidx)
	}
	if len(res.errs) > 0 {
		r.out = mongoerr.AppendWriteErrors(r.out, res.errs)
	}
	return nil
}
