package cmd

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
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addDDLCommands registers the database and collection commands.
func (e *Executor) addDDLCommands(add func(*command, ...string)) {
	add(&command{run: e.create, action: auth.ActionDDL, help: "create a collection explicitly"}, "create")
	add(&command{run: e.drop, action: auth.ActionDDL, help: "drop a collection"}, "drop")
	add(&command{run: e.collMod, action: auth.ActionDBAdmin, help: "change the options of a collection or of one of its indexes"}, "collMod")
	add(&command{run: e.dropDatabase, action: auth.ActionDBAdmin, help: "drop a database and all its collections"}, "dropDatabase")
	add(&command{run: e.listDatabases, action: auth.ActionAuthenticated, help: "list the databases", adminOnly: true}, "listDatabases")
	add(&command{run: e.listCollections, action: auth.ActionListing, help: "list the collections of a database"}, "listCollections")
	add(&command{run: e.renameCollection, action: auth.ActionDDL, needs: renameNeeds, help: "rename a collection", adminOnly: true}, "renameCollection")
	add(&command{run: e.collStats, action: auth.ActionListing, help: "statistics of a collection"}, "collStats", "collstats")
	add(&command{run: e.dbStats, action: auth.ActionListing, help: "statistics of a database"}, "dbStats", "dbstats")
	add(&command{run: e.compact, action: auth.ActionDBAdmin, help: "compact a collection: rewrite its data without deleted versions and return the space to the file system"}, "compact")
	add(&command{run: e.validateCmd, action: auth.ActionDBAdmin, help: "check a collection's documents against its indexes, partitions and statistics"}, "validate")
	e.addCappedCommands(add) // cmd_capped.go
	if e.opts.TestCommands {
		add(&command{run: e.ttlMonitorCommand, action: auth.ActionClusterAdmin, help: "test only: set the TTL monitor's interval and run a pass", adminOnly: true}, "cleaveTTLMonitor")
	}
}

// create runs the create command: an explicit collection with validated options.
func (e *Executor) create(ctx context.Context, r *request) error {
	first, _ := bsonx.FirstElement(r.body)
	name, err := args.Collection("create", first.Value())
	if err != nil {
		return err
	}
	if err := catalog.ValidateCollName(r.db, name); err != nil {
		return err
	}
	opts, err := ddl.ParseCreateOptions(r.db+"."+name, r.body)
	if err != nil {
		return err
	}
	sh, err := parseCreateSharding(r.body)
	if err != nil {
		return err
	}
	if catalog.ViewOf(opts) != nil {
		if sh != nil {
			return mongoerr.New(mongoerr.InvalidOptions, "option not supported on a view: shardKey")
		}
		return e.createView(r.db, name, opts) // view.go
	}
	if sh != nil {
		return e.createWithSharding(r.db, name, opts, sh) // cmd_cosmos.go
	}
	unlock, err := e.lockDDL(ctx, "create", r.body)
	if err != nil {
		return err
	}
	defer unlock()
	if c := e.st.Catalog.State().Collection(r.db, name); c != nil {
		if bytes.Equal(c.Options, opts) {
			return nil // MongoDB 7.0: creating an identical collection again succeeds
		}
		return mongoerr.New(mongoerr.NamespaceExists, "Collection %s.%s already exists.", r.db, name)
	}
	indexes := catalog.TimeseriesOf(opts).DefaultIndexes()
	if x, ok := collatedIDIndex(opts); ok {
		indexes = append([]store.Index{x}, indexes...)
	}
	_, err = e.st.Catalog.CreateCollection(store.Collection{DB: r.db, Name: name, Options: opts, Indexes: indexes})
	if err != nil {
		return catalog.ChangeError(err, r.db, name)
	}
	e.log.Info("created collection", zap.String("ns", r.db+"."+name))
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
func (e *Executor) drop(ctx context.Context, r *request) error {
	first, _ := bsonx.FirstElement(r.body)
	name, err := args.Collection("drop", first.Value())
	if err != nil {
		return err
	}
	unlock, err := e.lockDDL(ctx, "drop", r.body)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := e.st.Catalog.DropCollection(r.db, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return catalog.StoreError(err)
	}
	if catalog.IsView(c) { // no data, no indexes
		e.log.Info("dropped view", zap.String("ns", r.db+"."+name))
		r.out = bsoncore.AppendStringElement(r.out, "ns", r.db+"."+name)
		return nil
	}
	e.cat.DeleteData(c)
	e.log.Info("dropped collection", zap.String("ns", r.db+"."+name))
	r.out = bsoncore.AppendInt32Element(r.out, "nIndexesWas", int32(len(c.Indexes)))
	r.out = bsoncore.AppendStringElement(r.out, "ns", r.db+"."+name)
	return nil
}

// dropDatabase runs dropDatabase: the database's collections and their data go.
func (e *Executor) dropDatabase(ctx context.Context, r *request) error {
	switch r.db {
	case "admin", "config", "local":
		return mongoerr.New(mongoerr.IllegalOperation, "Dropping the '%s' database is prohibited.", r.db)
	}
	unlock, err := e.lockDDL(ctx, "dropDatabase", r.body)
	if err != nil {
		return err
	}
	defer unlock()
	colls, err := e.st.Catalog.DropDatabase(r.db)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return catalog.StoreError(err)
	}
	for _, c := range colls {
		e.cat.DeleteData(c)
	}
	e.log.Info("dropped database", zap.String("db", r.db), zap.Int("collections", len(colls)))
	r.out = bsoncore.AppendStringElement(r.out, "dropped", r.db)
	return nil
}

// renameCollection runs renameCollection (admin only): {renameCollection: "db.a", to:
// "db.b", dropTarget: false}.
func (e *Executor) renameCollection(ctx context.Context, r *request) error {
	const cmd = "renameCollection"
	first, _ := bsonx.FirstElement(r.body)
	from, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	var to string
	haveTo, dropTarget := false, false
	err = args.ForEach(cmd, r.body, func(key string, v bsoncore.Value) (bool, error) {
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
	unlock, err := e.lockDDL(ctx, "renameCollection", r.body)
	if err != nil {
		return err
	}
	defer unlock()
	_, dropped, err := e.st.Catalog.RenameCollection(fromDB, fromColl, toDB, toColl, dropTarget)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s does not exist", from)
	case errors.Is(err, store.ErrExists):
		return mongoerr.New(mongoerr.NamespaceExists, "target namespace exists")
	case err != nil:
		return catalog.StoreError(err)
	}
	if dropped != nil {
		e.cat.DeleteData(dropped)
	}
	e.log.Info("renamed collection", zap.String("from", from), zap.String("to", to))
	return nil
}

// parseNamespace splits and validates a full namespace "db.coll".
func parseNamespace(ns string) (string, string, error) {
	db, coll := splitNS(ns)
	if db == "" || coll == "" {
		return "", "", mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	if err := validateDBName(db); err != nil {
		return "", "", err
	}
	return db, coll, nil
}
