package changes

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// expandedOps are the operation types a stream reports only with showExpandedEvents.
var expandedOps = map[string]bool{OpCreate: true, OpCreateIndexes: true, OpDropIndexes: true, OpModify: true,
	OpShardCollection: true}

// str returns the string field key of rec, "" if absent.
func str(rec bsoncore.Document, key string) string {
	v, err := rec.LookupErr(key)
	if err != nil {
		return ""
	}
	s, _ := v.StringValueOK()
	return s
}

// sees reports whether the stream's scope covers namespace db.coll.
func (r *Reader) sees(db, coll string) bool {
	switch {
	case db == "admin" || db == "config" || db == "local":
		return false
	case r.opts.DB == "":
		return !strings.HasPrefix(coll, "system.")
	case r.opts.DB != db:
		return false
	case r.opts.Coll == "":
		return !strings.HasPrefix(coll, "system.")
	}
	return r.opts.Coll == coll
}

// event turns record rc into the change event the stream returns, or nil when the stream
// does not report it. An event that invalidates the stream (its collection dropped or renamed,
// its database dropped) queues the invalidate event.
func (r *Reader) event(ctx context.Context, rc *record) (bsoncore.Document, error) {
	rec := rc.rec
	op, db, coll := str(rec, fOp), str(rec, fDB), str(rec, fColl)
	switch {
	case op == OpDropDatabase:
		if r.opts.DB != db || r.opts.Coll != "" {
			return nil, nil // a collection's stream sees the drops of its collection, then invalidates
		}
	case isView(rec):
		if r.opts.Coll != "" || !r.opts.ShowExpandedEvents || !r.sees(db, coll) {
			return nil, nil
		}
		return appendViewEvent(nil, rc, op), nil
	case !r.sees(db, coll) && !r.seesRenameTo(op, rec):
		return nil, nil
	case expandedOps[op] && !r.opts.ShowExpandedEvents:
		return nil, nil
	}
	out, err := r.appendEvent(ctx, nil, rc, op)
	if err != nil {
		return nil, err
	}
	if r.invalidates(op) {
		tok := rc.tok
		tok.Invalidate = true
		r.invalidate = &record{tok: tok, rec: rec}
	}
	return out, nil
}

// seesRenameTo reports whether rec, an event of type op, is a rename into a namespace the
// stream covers: MongoDB's streams match a rename's target ("o.to") as well as its source, so
// that a stream on the target of a $out (or of a rename with dropTarget) sees the rename, and
// a database's stream the renames into it from another database.
func (r *Reader) seesRenameTo(op string, rec bsoncore.Document) bool {
	if op != OpRename {
		return false
	}
	to, ok := rec.Lookup(fTo).DocumentOK()
	return ok && r.sees(str(to, "db"), str(to, "coll"))
}

// isView reports whether rec is the event of a view's definition (DDL.View).
func isView(rec bsoncore.Document) bool {
	v, err := rec.LookupErr(fView)
	return err == nil && v.Type == bsoncore.TypeBoolean && v.Boolean()
}

// appendViewEvent appends the event of rc, of type op, the create, modify or drop of a view,
// as MongoDB makes it of a write to system.views: _id, operationType, clusterTime, wallTime,
// ns and operationDescription (the view's definition; none for a drop), nothing else.
func appendViewEvent(dst []byte, rc *record, op string) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, "_id")
	dst = rc.tok.AppendDoc(dst)
	dst = bsoncore.AppendStringElement(dst, "operationType", op)
	dst = bsoncore.AppendTimestampElement(dst, "clusterTime", uint32(rc.tok.TS>>32), uint32(rc.tok.TS))
	dst = appendField(dst, "wallTime", rc.rec, fWall)
	nidx, dst := bsoncore.AppendDocumentElementStart(dst, "ns")
	dst = bsoncore.AppendStringElement(dst, "db", str(rc.rec, fDB))
	dst = bsoncore.AppendStringElement(dst, "coll", str(rc.rec, fColl))
	dst, _ = bsoncore.AppendDocumentEnd(dst, nidx)
	dst = appendField(dst, "operationDescription", rc.rec, fOpDesc)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// invalidates reports whether an event of type op seen by the stream ends it.
func (r *Reader) invalidates(op string) bool {
	switch {
	case r.opts.DB == "":
		return false
	case r.opts.Coll == "":
		return op == OpDropDatabase
	}
	return op == OpDrop || op == OpRename
}

// appendEvent appends the change event of rc, of type op, to dst.
func (r *Reader) appendEvent(ctx context.Context, dst []byte, rc *record, op string) ([]byte, error) {
	rec := rc.rec
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, "_id")
	dst = rc.tok.AppendDoc(dst)
	dst = bsoncore.AppendStringElement(dst, "operationType", op)
	dst = bsoncore.AppendTimestampElement(dst, "clusterTime", uint32(rc.tok.TS>>32), uint32(rc.tok.TS))
	if v, err := rec.LookupErr(fWall); err == nil {
		dst = bsoncore.AppendValueElement(dst, "wallTime", v)
	}
	if v, err := rec.LookupErr(fUUID); err == nil && r.opts.ShowExpandedEvents {
		dst = bsoncore.AppendValueElement(dst, "collectionUUID", v)
	}
	if op == OpInsert || op == OpReplace {
		dst = appendField(dst, "fullDocument", rec, fDoc)
	}
	nidx, dst := bsoncore.AppendDocumentElementStart(dst, "ns")
	dst = bsoncore.AppendStringElement(dst, "db", str(rec, fDB))
	if op != OpDropDatabase {
		dst = bsoncore.AppendStringElement(dst, "coll", str(rec, fColl))
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, nidx)
	dst = appendField(dst, "documentKey", rec, fKey)
	if op == OpUpdate {
		dst = r.appendUpdateDescription(dst, rec)
		var err error
		if dst, err = r.appendPostImage(ctx, dst, rc); err != nil {
			return nil, err
		}
	}
	if op == OpUpdate || op == OpReplace || op == OpDelete {
		var err error
		if dst, err = r.appendPreImage(dst, rc); err != nil {
			return nil, err
		}
	}
	dst = appendField(dst, "lsid", rec, fLSID)
	dst = appendField(dst, "txnNumber", rec, fTxn)
	if op == OpRename {
		dst = appendField(dst, "to", rec, fTo)
	}
	if r.opts.ShowExpandedEvents {
		dst = appendField(dst, "operationDescription", rec, fOpDesc)
		dst = appendField(dst, "stateBeforeChange", rec, fBefore)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst, nil
}

// appendUpdateDescription appends an update's description, without disambiguatedPaths
// unless the stream shows expanded events.
func (r *Reader) appendUpdateDescription(dst []byte, rec bsoncore.Document) []byte {
	v, err := rec.LookupErr(fUpdate)
	if err != nil {
		return dst
	}
	if r.opts.ShowExpandedEvents {
		return bsoncore.AppendValueElement(dst, "updateDescription", v)
	}
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "updateDescription")
	elems, _ := v.Document().Elements()
	for _, el := range elems {
		if el.Key() != "disambiguatedPaths" {
			dst = append(dst, el...)
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// appendField appends rec's field from as field to, if rec has it.
func appendField(dst []byte, to string, rec bsoncore.Document, from string) []byte {
	if v, err := rec.LookupErr(from); err == nil {
		dst = bsoncore.AppendValueElement(dst, to, v)
	}
	return dst
}

// appendPostImage appends an update event's fullDocument as the stream's fullDocument
// option asks: the document as it is now (updateLookup), or the post-image the collection
// kept (whenAvailable, required).
func (r *Reader) appendPostImage(ctx context.Context, dst []byte, rc *record) ([]byte, error) {
	if r.opts.FullDocument != "updateLookup" {
		return appendImage(dst, "fullDocument", r.opts.FullDocument, "post", fPost, rc)
	}
	doc, err := r.lookup(ctx, rc.rec)
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return bsoncore.AppendNullElement(dst, "fullDocument"), nil
	}
	return bsoncore.AppendDocumentElement(dst, "fullDocument", doc), nil
}

// appendPreImage appends fullDocumentBeforeChange as the stream's option asks.
func (r *Reader) appendPreImage(dst []byte, rc *record) ([]byte, error) {
	return appendImage(dst, "fullDocumentBeforeChange", r.opts.BeforeChange, "pre", fPre, rc)
}

// appendImage appends field, the image kept in rc's field from ("pre" or "post", kind), as
// mode asks: whenAvailable (null when the collection kept none), required (an error then),
// anything else nothing.
func appendImage(dst []byte, field, mode, kind, from string, rc *record) ([]byte, error) {
	if mode != "whenAvailable" && mode != "required" {
		return dst, nil
	}
	if v, err := rc.rec.LookupErr(from); err == nil {
		return bsoncore.AppendValueElement(dst, field, v), nil
	}
	if mode == "required" {
		return nil, imageMissing(kind, rc)
	}
	return bsoncore.AppendNullElement(dst, field), nil
}

// imageMissing is MongoDB's error for a required image the collection did not keep.
func imageMissing(kind string, rc *record) error {
	return mongoerr.New(mongoerr.NoMatchingDocument,
		"Change stream was configured to require a %s-image for all update, delete and replace events, but the %s-image was not found for event: {ts: Timestamp(%d, %d)}",
		kind, kind, rc.tok.TS>>32, uint32(rc.tok.TS))
}

// lookup returns the current version of an update's document (updateLookup), nil when it
// is gone or its collection is not the one the event is about.
func (r *Reader) lookup(ctx context.Context, rec bsoncore.Document) (bsoncore.Document, error) {
	if r.opts.Lookup == nil {
		return nil, nil
	}
	var uuid []byte
	if v, err := rec.LookupErr(fUUID); err == nil {
		_, uuid, _ = v.BinaryOK()
	}
	key, _ := rec.Lookup(fKey).DocumentOK()
	return r.opts.Lookup(ctx, str(rec, fDB), str(rec, fColl), uuid, key)
}

// appendInvalidate appends the invalidate event that follows record inv.
func appendInvalidate(dst []byte, inv *record) bsoncore.Document {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, "_id")
	dst = inv.tok.AppendDoc(dst)
	dst = bsoncore.AppendStringElement(dst, "operationType", OpInvalidate)
	dst = bsoncore.AppendTimestampElement(dst, "clusterTime", uint32(inv.tok.TS>>32), uint32(inv.tok.TS))
	if v, err := inv.rec.LookupErr(fWall); err == nil {
		dst = bsoncore.AppendValueElement(dst, "wallTime", v)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}
