package command

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/failpoint"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// RecordChange records DDL events (a drop, rename, create...), in order and in one batch, in
// the change log of this node's first shard, for change streams, once the DDL operation
// committed. They are not in the catalog's own commit: a crash between the two loses the
// events (the operation is done). The internal databases are not recorded. Their time is
// taken now: an operation that concurrent writes may observe reserves it before its catalog
// change instead (ReserveChange).
func (e *Server) RecordChange(ds ...*changes.DDL) {
	dbs := make([]string, len(ds))
	for i, d := range ds {
		dbs[i] = d.DB
	}
	e.ReserveChange(dbs...).Record(ds...)
}

// recorded reports whether change streams report the events of database db: not those of
// the internal databases.
func recorded(db string) bool { return db != "admin" && db != "config" && db != "local" }

// ChangeSlot is the place in the change log of the DDL events of an operation about to
// commit (ReserveChange). Record or Release it exactly once; a nil ChangeSlot records nothing.
type ChangeSlot struct {
	e *Server
	b *store.Batch
}

// ReserveChange takes the time of the events of a DDL operation before its catalog change:
// every write stamped after that sees the change and sorts after its events (a document
// inserted into a collection just renamed comes after the rename), and streams read no
// further until the events are recorded. Call it under the DDL lock, just before the change,
// with the databases the operation changes: none of them reported (admin, config, local), it
// reserves nothing and the slot is nil — a change of the internal databases, such as the
// partition manager's config collections, must not move the clock under the clients.
func (e *Server) ReserveChange(dbs ...string) *ChangeSlot {
	if !slices.ContainsFunc(dbs, recorded) {
		return nil
	}
	i := slices.IndexFunc(e.Cat.Shards(), func(sh catalog.Shard) bool { _, ok := catalog.LocalDB(sh); return ok })
	if i < 0 {
		return nil
	}
	db, _ := catalog.LocalDB(e.Cat.Shards()[i])
	b := db.NewBatch()
	b.ReserveChangeTime()
	return &ChangeSlot{e: e, b: b}
}

// Record records ds at the slot's time and releases it.
func (s *ChangeSlot) Record(ds ...*changes.DDL) {
	if s == nil {
		return
	}
	defer s.b.Close()
	var rec []byte
	for _, d := range ds {
		if !recorded(d.DB) {
			continue
		}
		rec = changes.AppendDDLRecord(rec[:0], d)
		s.b.AddChange(rec)
	}
	if err := s.b.Commit(true); err != nil && len(ds) > 0 {
		s.e.Log.Warn("recording change events failed", zap.String("op", ds[0].Op), zap.String("ns", ds[0].DB+"."+ds[0].Coll), zap.Error(err))
	}
}

// Release gives the slot back without recording anything (the operation failed).
func (s *ChangeSlot) Release() {
	if s != nil {
		s.b.Close()
	}
}

// RecordCreate records the creation of collection or view c (nil: nothing), explicit or
// implicit (a first insert, createIndexes, shardCollection).
func (e *Server) RecordCreate(c *store.Collection) {
	if c != nil {
		e.RecordChange(CreateEvent(c))
	}
}

// implicitCreate is the catalog's OnCreate hook: the create event of a collection a write
// creates, at a time reserved before the creation.
func (e *Server) implicitCreate(db string) func(*store.Collection) {
	slot := e.ReserveChange(db)
	return func(c *store.Collection) {
		if c == nil {
			slot.Release()
			return
		}
		slot.Record(CreateEvent(c))
	}
}

// CreateEvent is the create event of collection or view c.
func CreateEvent(c *store.Collection) *changes.DDL {
	if catalog.IsView(c) {
		return &changes.DDL{Op: changes.OpCreate, DB: c.DB, Coll: c.Name, Desc: ViewDescription(c), View: true}
	}
	b := bsoncore.NewDocumentBuilder()
	for i := range c.Indexes {
		if c.Indexes[i].ID == store.IDIndexID {
			b.AppendDocument("idIndex", catalog.IndexSpecDoc(&c.Indexes[i]))
		}
	}
	// The collection's options follow, as in MongoDB's create oplog entry, so that a replay
	// of the log (cleave restore --until) creates it as it was.
	elems, _ := c.Options.Elements()
	for _, el := range elems {
		if el.Key() != "idIndex" {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return &changes.DDL{Op: changes.OpCreate, DB: c.DB, Coll: c.Name, UUID: c.UUID[:], Desc: b.Build()}
}

// ViewDescription is the operationDescription of the create or modify event of view c: its
// definition as MongoDB's system.views holds it, {viewOn, pipeline, collation}.
func ViewDescription(c *store.Collection) bsoncore.Document {
	v := catalog.ViewOf(c.Options)
	b := bsoncore.NewDocumentBuilder().AppendString("viewOn", v.On)
	aidx, arr := bsoncore.AppendArrayStart(nil)
	for i, st := range v.Pipeline {
		arr = bsoncore.AppendDocumentElement(arr, strconv.Itoa(i), st)
	}
	arr, _ = bsoncore.AppendArrayEnd(arr, aidx)
	b.AppendArray("pipeline", arr)
	if coll, ok := c.Options.Lookup("collation").DocumentOK(); ok {
		b.AppendDocument("collation", coll)
	}
	return b.Build()
}

// RecordDrop records the drop of collection or view c.
func (e *Server) RecordDrop(c *store.Collection) { e.RecordChange(DropEvent(c)) }

// DropEvent is the drop event of collection or view c.
func DropEvent(c *store.Collection) *changes.DDL {
	return &changes.DDL{Op: changes.OpDrop, DB: c.DB, Coll: c.Name, UUID: c.UUID[:], View: catalog.IsView(c)}
}

// RenameEvent is the event of the rename of fromDB.fromColl into renamed, dropping dropped
// (nil: none), with its operationDescription ({to, dropTarget}): renameCollection's, and
// $out's rename of its temporary collection over the target.
func RenameEvent(fromDB, fromColl string, renamed, dropped *store.Collection) *changes.DDL {
	b := bsoncore.NewDocumentBuilder().AppendDocument("to", bsoncore.NewDocumentBuilder().
		AppendString("db", renamed.DB).AppendString("coll", renamed.Name).Build())
	if dropped != nil {
		b.AppendBinary("dropTarget", 4, dropped.UUID[:])
	}
	return &changes.DDL{Op: changes.OpRename, DB: fromDB, Coll: fromColl, UUID: renamed.UUID[:],
		ToDB: renamed.DB, ToColl: renamed.Name, Desc: b.Build()}
}

// RecordCollChange records DDL event op on collection c with operationDescription desc
// (nil: none).
func (e *Server) RecordCollChange(op string, c *catalog.Coll, desc []byte) {
	e.RecordChange(&changes.DDL{Op: op, DB: c.Meta.DB, Coll: c.Meta.Name, UUID: c.Meta.UUID[:], Desc: desc})
}

// GetMoreCheckedOut runs what comes between a getMore's checkout of cursor c and its batch:
// the failGetMoreAfterCursorCheckout failpoint, whose error (or closed connection) the getMore
// answers.
func (e *Server) GetMoreCheckedOut(ctx context.Context, r *Request, c *cursor.Cursor) error {
	_, err := e.FailGetMore.Eval(ctx, &failpoint.Op{Name: r.Name, AppName: r.Conn.AppName(), Namespace: c.Ns,
		Names: func(string) bool { return false }}, r.Conn.Log)
	return err
}

// resumableCodes are the errors after which a change stream resumes (mongod's
// isResumableChangeStreamError: network, "not primary", shutdown, stale routing and
// retryable errors).
var resumableCodes = map[mongoerr.Code]bool{
	mongoerr.HostUnreachable: true, mongoerr.HostNotFound: true, mongoerr.NetworkTimeout: true,
	mongoerr.ShutdownInProgress: true, mongoerr.PrimarySteppedDown: true, mongoerr.ExceededTimeLimit: true,
	mongoerr.SocketException: true, mongoerr.NotWritablePrimary: true, mongoerr.InterruptedAtShutdown: true,
	mongoerr.InterruptedDueToReplStateChange: true, mongoerr.NotPrimaryNoSecondaryOk: true,
	mongoerr.NotPrimaryOrSecondary: true, mongoerr.StaleShardVersion: true, mongoerr.StaleEpoch: true,
	mongoerr.StaleConfig: true, mongoerr.RetryChangeStream: true, mongoerr.FailedToSatisfyReadPreference: true,
}

// LabelResumable gives err, a getMore's error on change stream cursor c, the label
// ResumableChangeStreamError when the stream can resume after it, as mongod does.
func LabelResumable(c *cursor.Cursor, err error) error {
	var me *mongoerr.Error
	if c.Waiter == nil || !errors.As(err, &me) || !resumableCodes[me.Code] {
		return err
	}
	labeled := *me
	labeled.Labels = append(append([]string(nil), me.Labels...), "ResumableChangeStreamError")
	return &labeled
}
