package changes

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
)

// Operation types, as change events name them.
const (
	OpInsert        = "insert"
	OpUpdate        = "update"
	OpReplace       = "replace"
	OpDelete        = "delete"
	OpDrop          = "drop"
	OpRename        = "rename"
	OpDropDatabase  = "dropDatabase"
	OpCreate        = "create"
	OpCreateIndexes = "createIndexes"
	OpDropIndexes   = "dropIndexes"
	OpModify        = "modify"
	// OpShardCollection is a collection sharded by shardCollection (or created sharded).
	OpShardCollection = "shardCollection"
	OpInvalidate      = "invalidate"
)

// Fields of a change record (a BSON document; short names, every write carries one).
const (
	fOp      = "o"    // operation type
	fDB      = "db"   // database
	fColl    = "c"    // collection ("" for a database's events)
	fUUID    = "ui"   // collection UUID
	fKey     = "k"    // documentKey
	fDoc     = "d"    // the full document: insert, replace
	fUpdate  = "u"    // updateDescription
	fPre     = "pre"  // pre-image (changeStreamPreAndPostImages)
	fPost    = "post" // post-image of an update (changeStreamPreAndPostImages)
	fWall    = "w"    // wall time
	fLSID    = "lsid" // a transaction's session
	fTxn     = "txn"  // a transaction's number
	fTo      = "to"   // rename: {db, coll}
	fOpDesc  = "x"    // DDL: operationDescription
	fIndexes = "ix"   // createIndexes, dropIndexes: the indexes
	fBefore  = "sb"   // modify: stateBeforeChange
	fView    = "vw"   // DDL of a view (create, modify, drop): true
)

// Write is one document write to record: what exec/write stages (an insert has Old nil, a
// delete New nil).
type Write struct {
	Hash    uint64
	ID      []byte // encoded _id
	Old     bsoncore.Document
	New     bsoncore.Document
	Replace bool // a replacement (not an update with operators or a pipeline)
	// ByRef leaves an insert's document out of its record: the batch adds the record with
	// AddChangeDoc, which refers to the document it writes (store's changes_ref.go).
	ByRef bool
	// Wall is the wall time to record, in milliseconds since the epoch (0: now). A writer
	// reads the clock once for all its writes: per record, it took a fifth of AppendRecord.
	Wall int64
}

// Recorded reports whether writes to collection ci are recorded: not those of the internal
// databases (admin, config, local), of time-series buckets, or of views; none at all in the
// nochangelog build (logwrites.go).
func Recorded(ci *catalog.Coll) bool {
	if !logWrites {
		return false
	}
	switch ci.Meta.DB {
	case "admin", "config", "local":
		return false
	}
	return ci.TS == nil && ci.View == nil
}

// PrePostImages reports whether ci keeps pre- and post-images for change streams
// (changeStreamPreAndPostImages: {enabled: true}).
func PrePostImages(ci *catalog.Coll) bool {
	v, ok := bsonx.Lookup(ci.Meta.Options, "changeStreamPreAndPostImages.enabled")
	return ok && v.Type == bsoncore.TypeBoolean && v.Boolean()
}

// AppendRecord appends the change record of w, a write to collection ci, to dst. An update
// that changed nothing is still recorded (MongoDB's no-op updates are not written at all;
// exec/write stages none).
func AppendRecord(dst []byte, ci *catalog.Coll, w *Write) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	doc := w.New
	if doc == nil {
		doc = w.Old
	}
	op := OpInsert
	switch {
	case w.Old == nil:
	case w.New == nil:
		op = OpDelete
	case w.Replace:
		op = OpReplace
	default:
		op = OpUpdate
	}
	dst = bsoncore.AppendStringElement(dst, fOp, op)
	dst = appendNS(dst, ci)
	dst = appendDocumentKey(dst, ci, doc)
	switch {
	case op == OpInsert && w.ByRef:
	case op == OpInsert, op == OpReplace:
		dst = bsoncore.AppendDocumentElement(dst, fDoc, w.New)
	case op == OpUpdate:
		dst = bsoncore.AppendDocumentElement(dst, fUpdate, Diff(w.Old, w.New))
	}
	if w.Old != nil && PrePostImages(ci) {
		dst = bsoncore.AppendDocumentElement(dst, fPre, w.Old)
		if op == OpUpdate {
			dst = bsoncore.AppendDocumentElement(dst, fPost, w.New)
		}
	}
	wall := w.Wall
	if wall == 0 {
		wall = time.Now().UnixMilli()
	}
	dst = bsoncore.AppendDateTimeElement(dst, fWall, wall)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// appendNS appends the database, collection and UUID of ci.
func appendNS(dst []byte, ci *catalog.Coll) []byte {
	dst = bsoncore.AppendStringElement(dst, fDB, ci.Meta.DB)
	dst = bsoncore.AppendStringElement(dst, fColl, ci.Meta.Name)
	return bsoncore.AppendBinaryElement(dst, fUUID, binaryUUID, ci.Meta.UUID[:])
}

// appendDocumentKey appends doc's documentKey: the shard key's fields, then _id, as MongoDB
// reports it for a sharded collection ({_id} alone otherwise).
func appendDocumentKey(dst []byte, ci *catalog.Coll, doc bsoncore.Document) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, fKey)
	hasID := false
	for _, f := range ci.ShardKey {
		if f.Path == "_id" {
			hasID = true
		}
		if v, ok := bsonx.Lookup(doc, f.Path); ok {
			dst = bsoncore.AppendValueElement(dst, f.Path, v)
		}
	}
	if !hasID {
		if v, ok := catalog.FirstValue(doc, "_id"); ok {
			dst = bsoncore.AppendValueElement(dst, "_id", v)
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// DDL is a collection or database event to record (drop, rename, create...).
type DDL struct {
	Op       string
	DB, Coll string
	UUID     []byte // nil: none (a database's events)
	// ToDB and ToColl name a rename's target.
	ToDB, ToColl string
	// Desc is the event's operationDescription (showExpandedEvents), nil if none.
	Desc bsoncore.Document
	// Before is a modify event's stateBeforeChange, nil if none.
	Before bsoncore.Document
	// View marks the event of a view's definition (create, modify, drop), which MongoDB
	// derives from its writes to system.views: only database and cluster streams with
	// showExpandedEvents report it, without collectionUUID, and it invalidates nothing.
	View bool
}

// AppendDDLRecord appends the record of d to dst.
func AppendDDLRecord(dst []byte, d *DDL) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendStringElement(dst, fOp, d.Op)
	dst = bsoncore.AppendStringElement(dst, fDB, d.DB)
	dst = bsoncore.AppendStringElement(dst, fColl, d.Coll)
	if d.UUID != nil && !d.View {
		dst = bsoncore.AppendBinaryElement(dst, fUUID, binaryUUID, d.UUID)
	}
	if d.Op == OpRename {
		tidx, out := bsoncore.AppendDocumentElementStart(dst, fTo)
		out = bsoncore.AppendStringElement(out, "db", d.ToDB)
		out = bsoncore.AppendStringElement(out, "coll", d.ToColl)
		dst, _ = bsoncore.AppendDocumentEnd(out, tidx)
	}
	if d.Desc != nil {
		dst = bsoncore.AppendDocumentElement(dst, fOpDesc, d.Desc)
	}
	if d.Before != nil {
		dst = bsoncore.AppendDocumentElement(dst, fBefore, d.Before)
	}
	if d.View {
		dst = bsoncore.AppendBooleanElement(dst, fView, true)
	}
	dst = bsoncore.AppendDateTimeElement(dst, fWall, time.Now().UnixMilli())
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// TagTxn returns rec with the session and number of the transaction it commits in.
func TagTxn(rec []byte, lsid bsoncore.Document, txnNumber int64) []byte {
	out := make([]byte, 0, len(rec)+len(lsid)+32)
	out = append(out, rec[:len(rec)-1]...)
	out = bsoncore.AppendDocumentElement(out, fLSID, lsid)
	out = bsoncore.AppendInt64Element(out, fTxn, txnNumber)
	out = append(out, 0)
	return bsoncore.UpdateLength(out, 0, int32(len(out)))
}

// WithDoc returns rec, the record of an insert added by reference (Write.ByRef), with doc,
// the document the log read with it, appended to dst as if the record had copied it.
func WithDoc(dst []byte, rec, doc []byte) []byte {
	dst = append(dst, rec[:len(rec)-1]...)
	dst = bsoncore.AppendDocumentElement(dst, fDoc, doc)
	dst = append(dst, 0)
	return bsoncore.UpdateLength(dst, 0, int32(len(dst)))
}

// binaryUUID is the BSON binary subtype of a UUID.
const binaryUUID = 4
