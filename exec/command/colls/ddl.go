package colls

import (
	"bytes"
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addDDLCommands registers the database and collection commands.
func (h *Handlers) addDDLCommands(add func(*command.Command)) {
	add(&command.Command{Name: "create", Run: h.create, Action: auth.ActionDDL, Help: "create a collection explicitly", Props: command.InTxn | command.TxnCreates | command.WriteConcern | command.APIV1})
	add(&command.Command{Name: "drop", Run: h.drop, Action: auth.ActionDDL, Help: "drop a collection", Props: command.WriteConcern | command.APIV1})
	add(&command.Command{Name: "collMod", Run: h.collMod, Action: auth.ActionDBAdmin, Help: "change the options of a collection or of one of its indexes", Props: command.WriteConcern | command.APIV1})
	add(&command.Command{Name: "dropDatabase", Run: h.dropDatabase, Action: auth.ActionDBAdmin, Help: "drop a database and all its collections", Props: command.WriteConcern | command.APIV1})
	add(&command.Command{Name: "listDatabases", Run: h.listDatabases, Action: auth.ActionAuthenticated, Help: "list the databases", AdminOnly: true, Props: command.APIV1})
	add(&command.Command{Name: "listCollections", Run: h.listCollections, Action: auth.ActionListing, Help: "list the collections of a database", Props: command.OpensCursor | command.APIV1})
	add(&command.Command{Name: "renameCollection", Run: h.renameCollection, Action: auth.ActionDDL, Needs: renameNeeds, Help: "rename a collection", AdminOnly: true, Props: command.WriteConcern | command.APIV1})
	add(&command.Command{Name: "collStats", Aliases: []string{"collstats"}, Run: h.collStats, Action: auth.ActionListing, Help: "statistics of a collection", Props: command.APIV1})
	add(&command.Command{Name: "dbStats", Aliases: []string{"dbstats"}, Run: h.dbStats, Action: auth.ActionListing, Help: "statistics of a database"})
	add(&command.Command{Name: "compact", Run: h.compact, Action: auth.ActionDBAdmin, Help: "compact a collection: rewrite its data without deleted versions and return the space to the file system"})
	add(&command.Command{Name: "dataSize", Aliases: []string{"datasize"}, Run: h.dataSize, Action: auth.ActionRead, Help: "the documents and bytes of a collection"})
	add(&command.Command{Name: "validate", Run: h.validateCmd, Action: auth.ActionDBAdmin, Help: "check a collection's documents against its indexes, partitions and statistics"})
	add(&command.Command{Name: "backup", Run: h.backupCmd, Action: auth.ActionClusterAdmin, Help: "back up every shard and the catalog at one cluster time into a directory of the server (docs/backup.md)", AdminOnly: true})
	h.addBackupInternal(add) // backup_cluster.go
	h.addCappedCommands(add) // capped.go
	if h.Opts.TestCommands {
		add(&command.Command{Name: "cleaveTTLMonitor", Run: h.ttlMonitorCommand, Action: auth.ActionClusterAdmin, Help: "test only: set the TTL monitor's interval and run a pass", AdminOnly: true})
	}
}

// create runs the create command: an explicit collection with validated options.
func (h *Handlers) create(ctx context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.Collection("create", first.Value())
	if err != nil {
		return err
	}
	if err := catalog.ValidateCollName(r.DB, name); err != nil {
		return err
	}
	opts, err := ddl.ParseCreateOptions(r.DB+"."+name, r.Body)
	if err != nil {
		return err
	}
	sh, err := parseCreateSharding(r.Body)
	if err != nil {
		return err
	}
	if catalog.ViewOf(opts) != nil {
		if sh != nil {
			return mongoerr.New(mongoerr.InvalidOptions, "option not supported on a view: shardKey")
		}
		if err := h.CRUD.CreateView(r.DB, name, opts); err != nil {
			return err
		}
		h.RecordCreate(h.Storage.Catalog.State().Collection(r.DB, name))
		return nil
	}
	if sh != nil {
		return h.createWithSharding(r.DB, name, opts, sh)
	}
	unlock, err := h.LockDDL(ctx, "create", r.Body)
	if err != nil {
		return err
	}
	defer unlock()
	if c := h.Storage.Catalog.State().Collection(r.DB, name); c != nil {
		if bytes.Equal(c.Options, opts) {
			return nil // MongoDB 7.0: creating an identical collection again succeeds
		}
		return mongoerr.New(mongoerr.NamespaceExists, "Collection %s.%s already exists.", r.DB, name)
	}
	indexes := catalog.TimeseriesOf(opts).DefaultIndexes()
	if x, ok := collatedIDIndex(opts); ok {
		indexes = append([]store.Index{x}, indexes...)
	}
	slot := h.ReserveChange(r.DB)
	created, err := h.Storage.Catalog.CreateCollection(store.Collection{DB: r.DB, Name: name, Options: opts, Indexes: indexes})
	if err != nil {
		slot.Release()
		return catalog.ChangeError(err, r.DB, name)
	}
	slot.Record(command.CreateEvent(created))
	h.Log.Info("created collection", zap.String("ns", r.DB+"."+name))
	return nil
}

// collatedIDIndex is the _id index of a collection created with options opts when they
// hold a default collation, which MongoDB's create gives the _id index too (its spec shows
// it; _id is unique under it). A capped, clustered or time-series collection keeps a
// simple _id index here.
func collatedIDIndex(opts bsoncore.Document) (store.Index, bool) {
	coll, ok := opts.Lookup("collation").DocumentOK()
	if !ok || catalog.CappedOf(opts) != nil || catalog.ClusteredOf(opts) != nil || catalog.TimeseriesOf(opts) != nil {
		return store.Index{}, false
	}
	spec := bsoncore.NewDocumentBuilder().AppendDocument("collation", coll).Build()
	return store.Index{Name: store.IDIndexName, Key: idKeyPattern, Spec: spec, Ready: true}, true
}

// drop runs the drop command. As on mongos 7.0, dropping a missing collection succeeds.
func (h *Handlers) drop(ctx context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.Collection("drop", first.Value())
	if err != nil {
		return err
	}
	unlock, err := h.LockDDL(ctx, "drop", r.Body)
	if err != nil {
		return err
	}
	defer unlock()
	// The namespace's zone ranges go first, whether it exists or not (a sharded collection's
	// go with its record); a failure then drops nothing.
	if err := h.forgetPendingZones(r.DB, name); err != nil {
		return catalog.StoreError(err)
	}
	release := h.Cat.HoldWriters() // as renameCollection does
	slot := h.ReserveChange(r.DB)
	c, err := h.Storage.Catalog.DropCollection(r.DB, name)
	release()
	if err != nil {
		slot.Release()
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return catalog.StoreError(err)
	}
	slot.Record(command.DropEvent(c))
	if catalog.IsView(c) { // no data, no indexes
		h.Log.Info("dropped view", zap.String("ns", r.DB+"."+name))
		r.Out = bsoncore.AppendStringElement(r.Out, "ns", r.DB+"."+name)
		return nil
	}
	h.Cat.DeleteData(c)
	h.Log.Info("dropped collection", zap.String("ns", r.DB+"."+name))
	r.Out = bsoncore.AppendInt32Element(r.Out, "nIndexesWas", int32(len(c.Indexes)))
	r.Out = bsoncore.AppendStringElement(r.Out, "ns", r.DB+"."+name)
	return nil
}

// dropDatabase runs dropDatabase: the database's collections and their data go.
func (h *Handlers) dropDatabase(ctx context.Context, r *command.Request) error {
	switch r.DB {
	case "admin", "config", "local":
		return mongoerr.New(mongoerr.IllegalOperation, "Dropping the '%s' database is prohibited.", r.DB)
	}
	unlock, err := h.LockDDL(ctx, "dropDatabase", r.Body)
	if err != nil {
		return err
	}
	defer unlock()
	slot := h.ReserveChange(r.DB)
	colls, err := h.Storage.Catalog.DropDatabase(r.DB)
	if err != nil {
		slot.Release()
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return catalog.StoreError(err)
	}
	events := make([]*changes.DDL, 0, len(colls)+1) // a drop for each collection, then dropDatabase
	for _, c := range colls {
		h.Cat.DeleteData(c)
		events = append(events, &changes.DDL{Op: changes.OpDrop, DB: c.DB, Coll: c.Name, UUID: c.UUID[:]})
	}
	slot.Record(append(events, &changes.DDL{Op: changes.OpDropDatabase, DB: r.DB})...)
	h.Log.Info("dropped database", zap.String("db", r.DB), zap.Int("collections", len(colls)))
	r.Out = bsoncore.AppendStringElement(r.Out, "dropped", r.DB)
	return nil
}

// renameCollection runs renameCollection (admin only): {renameCollection: "db.a", to:
// "db.b", dropTarget: false}.
func (h *Handlers) renameCollection(ctx context.Context, r *command.Request) error {
	const cmd = "renameCollection"
	first, _ := bsonx.FirstElement(r.Body)
	from, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	var to string
	haveTo, dropTarget := false, false
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "to":
			haveTo = true
			to, err = args.String(cmd, key, v)
		case "dropTarget":
			dropTarget, err = args.Bool(cmd, key, v)
		case "stayTemp":
			_, err = args.Bool(cmd, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	if !haveTo {
		return args.Missing(cmd, "to")
	}
	fromDB, fromColl, err := parseNamespace(from)
	if err != nil {
		return err
	}
	toDB, toColl, err := parseNamespace(to)
	if err != nil {
		return err
	}
	if err := catalog.ValidateCollName(toDB, toColl); err != nil {
		return err
	}
	if from == to {
		return mongoerr.New(mongoerr.IllegalOperation, "Can't rename a collection to itself")
	}
	unlock, err := h.LockDDL(ctx, "renameCollection", r.Body)
	if err != nil {
		return err
	}
	defer unlock()
	// Writers are held while the event's time is reserved and the catalog changes: an insert
	// into the source or into the target dropped here commits before both, or finds what
	// the name leads to after them.
	release := h.Cat.HoldWriters()
	slot := h.ReserveChange(fromDB, toDB)
	renamed, dropped, err := h.Storage.Catalog.RenameCollection(fromDB, fromColl, toDB, toColl, dropTarget)
	release()
	if err != nil {
		slot.Release()
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s does not exist", from)
	case errors.Is(err, store.ErrExists):
		return mongoerr.New(mongoerr.NamespaceExists, "target namespace exists")
	case err != nil:
		return catalog.StoreError(err)
	}
	if dropped != nil {
		h.Cat.DeleteData(dropped)
	}
	slot.Record(command.RenameEvent(fromDB, fromColl, renamed, dropped))
	h.Log.Info("renamed collection", zap.String("from", from), zap.String("to", to))
	return nil
}

// parseNamespace splits and validates a full namespace "db.coll".
func parseNamespace(ns string) (string, string, error) {
	db, coll := command.SplitNS(ns)
	if db == "" || coll == "" {
		return "", "", mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	if err := catalog.ValidateDBName(db); err != nil {
		return "", "", err
	}
	return db, coll, nil
}
