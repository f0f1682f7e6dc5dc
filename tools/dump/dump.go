package dump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cleavedb/cleave/tools/conn"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Options are `cleave dump`'s settings, named after mongodump's flags.
type Options struct {
	URI        string    // --uri
	DB         string    // --db: one database; "" is every database but local, config and admin
	Collection string    // --collection: one collection of DB
	Query      string    // --query: a filter in Extended JSON (needs Collection)
	Out        string    // --out: the directory ("dump" when empty and no Archive)
	Archive    string    // --archive: a file, or "-" for Stdout; "" writes a directory
	Gzip       bool      // --gzip
	Snapshot   bool      // --snapshot: every collection at one cluster time (a snapshot session)
	Stdout     io.Writer // where --archive=- goes
	Log        io.Writer // one line per collection dumped

	session *mongo.Session // the snapshot session of --snapshot
}

// namespace is one collection or view to dump, with what listCollections said of it.
type namespace struct {
	db, coll string
	meta     Metadata
	size     int64 // the collection's data size, for the archive's prelude
	count    int64 // its number of documents (collStats), for the progress bar
}

// Dump writes the namespaces o selects to a directory or an archive.
func Dump(ctx context.Context, o Options) error {
	if o.Query != "" && o.Collection == "" {
		return errors.New("--query needs --collection")
	}
	if o.Collection != "" && o.DB == "" {
		return errors.New("--collection needs --db")
	}
	var filter bson.D
	if o.Query != "" {
		if err := bson.UnmarshalExtJSON([]byte(o.Query), false, &filter); err != nil {
			return fmt.Errorf("--query is not an Extended JSON document: %w", err)
		}
	}
	c, err := conn.Connect(ctx, o.URI)
	if err != nil {
		return err
	}
	defer func() { _ = c.Disconnect(context.WithoutCancel(ctx)) }()
	nss, err := listNamespaces(ctx, c, o)
	if err != nil {
		return err
	}
	if filter == nil {
		filter = bson.D{}
	}
	if o.Snapshot {
		// Every read of a snapshot session is at its first read's cluster time (the server
		// keeps that snapshot for minSnapshotHistoryWindowInSeconds, 300 s by default).
		sess, err := c.StartSession(options.Session().SetSnapshot(true))
		if err != nil {
			return err
		}
		defer sess.EndSession(context.WithoutCancel(ctx))
		o.session = sess
	}
	if o.Archive != "" {
		err = dumpArchive(ctx, c, o, nss, filter)
	} else {
		err = dumpDir(ctx, c, o, nss, filter)
	}
	if o.session != nil && err == nil {
		t := o.session.SnapshotTime()
		say(o.Log, "dumped at cluster time Timestamp(%d, %d)\n", t.T, t.I)
	}
	return err
}

// listNamespaces finds the collections and views o selects, sorted by database and name,
// with their options, indexes and shard keys.
func listNamespaces(ctx context.Context, c *mongo.Client, o Options) ([]namespace, error) {
	dbs := []string{o.DB}
	if o.DB == "" {
		names, err := c.ListDatabaseNames(ctx, bson.D{})
		if err != nil {
			return nil, fmt.Errorf("listDatabases: %w", err)
		}
		dbs = slices.DeleteFunc(names, skipDB)
	}
	slices.Sort(dbs)
	keys := shardKeys(ctx, c)
	var out []namespace
	for _, db := range dbs {
		nss, err := listColls(ctx, c.Database(db), o.Collection)
		if err != nil {
			return nil, err
		}
		for i := range nss {
			nss[i].meta.ShardKey = keys[db+"."+nss[i].coll]
			if err := addIndexes(ctx, c.Database(db), &nss[i]); err != nil {
				return nil, err
			}
		}
		out = append(out, nss...)
	}
	return out, nil
}

// listColls lists db's collections (only coll when set), skipping system collections.
func listColls(ctx context.Context, db *mongo.Database, coll string) ([]namespace, error) {
	filter := bson.D{}
	if coll != "" {
		filter = bson.D{{Key: "name", Value: coll}}
	}
	cur, err := db.ListCollections(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("listCollections on %s: %w", db.Name(), err)
	}
	defer func() { _ = cur.Close(ctx) }()
	var out []namespace
	for cur.Next(ctx) {
		var spec struct {
			Name    string `bson:"name"`
			Type    string `bson:"type"`
			Options bson.D `bson:"options"`
		}
		if err := cur.Decode(&spec); err != nil {
			return nil, fmt.Errorf("listCollections on %s: %w", db.Name(), err)
		}
		if coll == "" && skipColl(spec.Name) {
			continue
		}
		ns := namespace{db: db.Name(), coll: spec.Name, meta: Metadata{
			Options: spec.Options, UUID: uuidString(cur.Current), CollectionName: spec.Name,
		}}
		if spec.Type != "collection" {
			ns.meta.Type = spec.Type
		}
		out = append(out, ns)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("listCollections on %s: %w", db.Name(), err)
	}
	if coll != "" && len(out) == 0 {
		return nil, fmt.Errorf("%s.%s: no such collection", db.Name(), coll)
	}
	slices.SortFunc(out, func(a, b namespace) int { return strings.Compare(a.coll, b.coll) })
	return out, nil
}

// addIndexes reads ns's index specs into its metadata, and its size; views have neither.
func addIndexes(ctx context.Context, db *mongo.Database, ns *namespace) error {
	ns.meta.Indexes = []bson.D{}
	if ns.meta.Type == "view" {
		return nil
	}
	cur, err := db.Collection(ns.coll).Indexes().List(ctx)
	if err != nil {
		return fmt.Errorf("listIndexes on %s.%s: %w", ns.db, ns.coll, err)
	}
	if err := cur.All(ctx, &ns.meta.Indexes); err != nil {
		return fmt.Errorf("listIndexes on %s.%s: %w", ns.db, ns.coll, err)
	}
	var stats struct {
		Size  int64 `bson:"size"`
		Count int64 `bson:"count"`
	}
	if db.RunCommand(ctx, bson.D{{Key: "collStats", Value: ns.coll}}).Decode(&stats) == nil {
		ns.size, ns.count = stats.Size, stats.Count
	}
	return nil
}

// shardKeys maps "db.coll" to the shard key of every sharded collection, from
// config.collections; a server that has none gives an empty map.
func shardKeys(ctx context.Context, c *mongo.Client) map[string]bson.D {
	keys := map[string]bson.D{}
	cur, err := c.Database("config").Collection("collections").Find(ctx, bson.D{})
	if err != nil {
		return keys
	}
	defer func() { _ = cur.Close(ctx) }()
	for cur.Next(ctx) {
		var d struct {
			ID      string `bson:"_id"`
			Key     bson.D `bson:"key"`
			Dropped bool   `bson:"dropped"`
		}
		if cur.Decode(&d) == nil && !d.Dropped && len(d.Key) > 0 {
			keys[d.ID] = d.Key
		}
	}
	return keys
}
