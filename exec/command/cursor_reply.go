package command

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ParseCursorOption parses the cursor option of command cmd ({batchSize}, and the fields
// named in accepted, which are ignored) and returns its batch size, -1 if absent.
func ParseCursorOption(cmd string, v bsoncore.Value, accepted ...string) (int64, error) {
	d, err := args.Doc(cmd, "cursor", v)
	if err != nil {
		return -1, err
	}
	batchSize := int64(-1)
	elems, _ := d.Elements()
	for _, el := range elems {
		switch key := el.Key(); {
		case key == "batchSize":
			n, err := args.Int64(cmd, "cursor.batchSize", el.Value())
			if err != nil {
				return -1, err
			}
			if n < 0 {
				return -1, mongoerr.New(mongoerr.Location51024, "BSON field 'batchSize' value must be >= 0, actual value '%d'", n)
			}
			batchSize = n
		case slices.Contains(accepted, key):
		default:
			return -1, mongoerr.New(mongoerr.Location40415, "BSON field '%s.cursor.%s' is an unknown field.", cmd, key)
		}
	}
	return batchSize, nil
}

// ListingCursor answers a listing command (listCollections, listIndexes) with a cursor over
// docs: the first batch holds batchSize of them (-1: all that fit), getMore the rest.
func (e *Server) ListingCursor(ctx context.Context, r *Request, ns string, docs []bsoncore.Document, batchSize int64) error {
	if batchSize < 0 {
		batchSize = math.MaxInt64
	}
	return e.FirstBatch(ctx, r, &cursor.Cursor{Ns: ns, Stream: &stream.Slice{Docs: docs}}, batchSize, false)
}

// SplitNS splits "db.coll".
func SplitNS(ns string) (string, string) {
	db, coll, _ := strings.Cut(ns, ".")
	return db, coll
}

// FirstBatch fills the first batch of cursor c, registers it if documents remain, and
// appends the cursor reply.
func (e *Server) FirstBatch(ctx context.Context, r *Request, c *cursor.Cursor, n int64, single bool) error {
	out, cidx, aidx := StartCursorReply(r.Out, "firstBatch")
	exhausted := false
	if n != 0 { // batchSize 0: an empty first batch and a cursor
		var err error
		// A single batch closes the cursor after it: it is not cut short by the memory
		// account, which is charged for all of it.
		mem := r.Mem
		if single {
			mem = nil
		}
		start := len(out)
		out, exhausted, err = c.FillBatch(ctx, out, n, mem)
		if err != nil {
			c.Close()
			return err
		}
		if single {
			r.Mem.Force(int64(len(out) - start))
		}
	}
	c.KeepTimeLeft(ctx)
	var id int64
	if !c.KeepOpen(exhausted) || single {
		c.Close()
	} else {
		c.LSID, c.HasSession = args.LSID(r.Body)
		c.Users = slices.Clone(r.Conn.Authn.Users)
		if r.Conn.openCursors.Add(1) > cursor.MaxPerConnection {
			r.Conn.openCursors.Add(-1)
			c.Close()
			return mongoerr.New(mongoerr.OperationFailed, "Cannot open a new cursor: this connection already has %d open cursors (the limit); exhaust or kill some first", cursor.MaxPerConnection)
		}
		c.OpenedBy = &r.Conn.openCursors
		c.Yield()
		id = e.Cursors.Add(c)
	}
	e.Counters.ReturnedDocs.Add(int64(countBatch(out[aidx:])))
	r.Out = EndCursorReplyOf(out, cidx, aidx, c, id)
	return nil
}

// countBatch is a cheap count of the elements of an open array (for metrics): it walks the
// elements in place, without the terminating byte, so nothing is copied.
func countBatch(b []byte) int {
	if len(b) < 4 {
		return 0
	}
	n := 0
	for rest := b[4:]; len(rest) > 0; n++ {
		_, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			break
		}
		rest = r
	}
	return n
}

// StartCursorReply opens {cursor: {<batch>: [ in out.
func StartCursorReply(out []byte, batch string) ([]byte, int32, int32) {
	cidx, out := bsoncore.AppendDocumentElementStart(out, "cursor")
	aidx, out := bsoncore.AppendArrayElementStart(out, batch)
	return out, cidx, aidx
}

// EndCursorReply closes the batch and adds id and ns.
func EndCursorReply(out []byte, cidx, aidx int32, id int64, ns string) []byte {
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	out = bsoncore.AppendInt64Element(out, "id", id)
	out = bsoncore.AppendStringElement(out, "ns", ns)
	out, _ = bsoncore.AppendDocumentEnd(out, cidx)
	return out
}

// EndCursorReplyOf is EndCursorReply for cursor c (id 0 once closed), with the fields of
// its Trailer after the batch.
func EndCursorReplyOf(out []byte, cidx, aidx int32, c *cursor.Cursor, id int64) []byte {
	if c.Trailer == nil {
		return EndCursorReply(out, cidx, aidx, id, c.Ns)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	out = c.Trailer(out)
	out = bsoncore.AppendInt64Element(out, "id", id)
	out = bsoncore.AppendStringElement(out, "ns", c.Ns)
	out, _ = bsoncore.AppendDocumentEnd(out, cidx)
	return out
}

// AppendCursorReply appends a complete cursor reply with the given documents: an exhausted
// cursor (id 0) and its first batch.
func AppendCursorReply(r *Request, ns string, docs []bsoncore.Document) error {
	out, cidx, aidx := StartCursorReply(r.Out, "firstBatch")
	for i, d := range docs {
		out = bsoncore.AppendDocumentElement(out, strconv.Itoa(i), d)
	}
	r.Out = EndCursorReply(out, cidx, aidx, 0, ns)
	return nil
}

// CheckCursorColl fails once the collection cursor c reads was dropped or renamed since it
// opened, with mongod's QueryPlanKilled (its plan executor's restore after a yield).
func (e *Server) CheckCursorColl(c *cursor.Cursor) error {
	if c.Coll == nil {
		return nil
	}
	m := e.Cat.Store().State().CollectionByID(c.Coll.ID)
	switch {
	case m == nil || m.UUID != c.Coll.UUID:
		return mongoerr.New(mongoerr.QueryPlanKilled, "collection dropped. UUID %s", uuid.UUID(c.Coll.UUID).String())
	case m.DB != c.Coll.DB || m.Name != c.Coll.Name:
		return mongoerr.New(mongoerr.QueryPlanKilled, "collection renamed from '%s.%s' to '%s.%s'. UUID %s",
			c.Coll.DB, c.Coll.Name, m.DB, m.Name, uuid.UUID(c.Coll.UUID).String())
	}
	return nil
}
