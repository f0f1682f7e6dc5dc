package write

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Concern is what cleave honours of a write concern: whether the client waits for
// durability. Replication-related fields (w: "majority", wtimeout) are accepted as a
// standalone mongos accepts them.
type Concern struct {
	unacknowledged bool // w: 0
	NoJournal      bool // j: false
}

// Sync reports whether a write must be synced to the WAL before it is acknowledged.
func (wc Concern) Sync() bool { return !wc.unacknowledged && !wc.NoJournal }

// ParseConcern reads the writeConcern generic argument of a write command.
func ParseConcern(body bsoncore.Document) Concern {
	var wc Concern
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
		wc.NoJournal = true
	}
	return wc
}

// Upsert is one document an update inserted: its statement index and _id.
type Upsert struct {
	Index int
	ID    bsoncore.Value
}

// Results accumulates the outcome of a write command's statements.
type Results struct {
	N         int64 // inserted, matched (update) or deleted documents
	NModified int64
	Upserted  []Upsert
	Errs      []mongoerr.WriteError
	Charge    float64 // request units of the writes (the reads that found them are the caller's)
}

// AppendReply appends n, nModified (for updates), upserted and writeErrors to a reply.
func (res *Results) AppendReply(dst []byte, update bool) []byte {
	dst = bsoncore.AppendInt32Element(dst, "n", int32(res.N))
	if update {
		dst = bsoncore.AppendInt32Element(dst, "nModified", int32(res.NModified))
	}
	if len(res.Upserted) > 0 {
		aidx, out := bsoncore.AppendArrayElementStart(dst, "upserted")
		for i, u := range res.Upserted {
			didx, o := bsoncore.AppendDocumentElementStart(out, strconv.Itoa(i))
			o = bsoncore.AppendInt32Element(o, "index", int32(u.Index))
			o = bsoncore.AppendValueElement(o, "_id", u.ID)
			out, _ = bsoncore.AppendDocumentEnd(o, didx)
		}
		dst, _ = bsoncore.AppendArrayEnd(out, aidx)
	}
	if len(res.Errs) > 0 {
		dst = mongoerr.AppendWriteErrors(dst, res.Errs)
	}
	return dst
}
