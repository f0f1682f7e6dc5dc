package dump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cleavedb/cleave/tools/conn"
	"github.com/cleavedb/cleave/tools/progress"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Batch limits of a load's inserts: documents, and bytes well under a 48 MB message.
const (
	batchDocs  = 1000
	batchBytes = 8 << 20
)

// LoadOptions are `cleave load`'s settings, named after mongorestore's flags.
type LoadOptions struct {
	URI            string    // --uri
	Dir            string    // the dump directory (mongorestore's positional argument)
	Archive        string    // --archive: a file, or "-" for Stdin; "" reads Dir
	DB, Collection string    // --db, --collection: load only these
	Filter         Filter    // --nsInclude, --nsExclude (of the dump's namespaces)
	Rename         Rename    // --nsFrom, --nsTo
	Drop           bool      // --drop: drop each collection (and view) before loading it
	NoIndexRestore bool      // --noIndexRestore
	Stdin          io.Reader // where --archive=- comes from
	Log            io.Writer // one line per collection loaded
}

// Result counts what a load did.
type Result struct {
	Loaded, Failed int64 // documents inserted, and refused by the server (each reported)
}

// loader is one load in progress.
type loader struct {
	c       *mongo.Client
	o       LoadOptions
	byNS    map[string]*entry
	batch   map[string][]any
	size    map[string]int
	counts  map[string][2]int64
	bars    map[string]*progress.Bar // by the dump's namespace, while it loads
	reports int
	res     Result
}

// Load reads a dump (a directory or an archive) and writes the namespaces it selects into
// the server: collections with their options and shard keys, their documents, their indexes,
// then views.
func Load(ctx context.Context, o LoadOptions) (Result, error) {
	src, closeSrc, err := openSource(o)
	if err != nil {
		return Result{}, err
	}
	defer closeSrc()
	renames, err := o.Rename.compile()
	if err != nil {
		return Result{}, err
	}
	c, err := conn.Connect(ctx, o.URI)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = c.Disconnect(context.WithoutCancel(ctx)) }()
	l := &loader{c: c, o: o, byNS: map[string]*entry{}, batch: map[string][]any{}, size: map[string]int{}, counts: map[string][2]int64{},
		bars: map[string]*progress.Bar{}}
	var views []*entry
	for _, e := range src.entries() {
		if !l.selects(e) {
			continue
		}
		src := e.ns() // the source names the documents by the dump's names
		e, err := renamed(e, renames)
		if err != nil {
			return l.res, err
		}
		if e.meta.Type == "view" {
			views = append(views, e)
			continue
		}
		l.byNS[src] = e
		if err := l.prepare(ctx, e); err != nil {
			return l.res, err
		}
	}
	keep := func(ns string) bool { return l.byNS[ns] != nil }
	err = src.documents(keep, func(ns string, d []byte) error { return l.add(ctx, ns, d) }, func(ns string) error { return l.finish(ctx, ns) })
	if err != nil {
		return l.res, err
	}
	for ns := range l.byNS { // an archive cut short of some EOFs still gets its indexes
		if err := l.finish(ctx, ns); err != nil {
			return l.res, err
		}
	}
	for _, v := range views {
		if err := l.view(ctx, v); err != nil {
			return l.res, err
		}
	}
	return l.res, nil
}

// renamed returns e, or a copy of it under the namespace rs load it as (the source's own
// entry keeps the dump's name).
func renamed(e *entry, rs []renamer) (*entry, error) {
	ns := apply(rs, e.ns())
	if ns == e.ns() {
		return e, nil
	}
	db, coll, ok := strings.Cut(ns, ".")
	if !ok || db == "" || coll == "" {
		return nil, fmt.Errorf("--nsTo makes %s into %q, which is not db.collection", e.ns(), ns)
	}
	c := *e
	c.db, c.coll = db, coll
	return &c, nil
}

// openSource opens the dump o names.
func openSource(o LoadOptions) (source, func(), error) {
	switch {
	case o.Archive == "-":
		s, err := readArchive(o.Stdin)
		return s, func() {}, err
	case o.Archive != "":
		f, err := os.Open(o.Archive)
		if err != nil {
			return nil, nil, err
		}
		s, err := readArchive(f)
		if err != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("%s: %w", o.Archive, err)
		}
		return s, func() { _ = f.Close() }, nil
	}
	dir := o.Dir
	if dir == "" {
		dir = "dump"
	}
	s, err := readDir(dir, o.DB)
	return s, func() {}, err
}

// selects reports whether the load takes e.
func (l *loader) selects(e *entry) bool {
	if (l.o.DB != "" && e.db != l.o.DB) || (l.o.Collection != "" && e.coll != l.o.Collection) {
		return false
	}
	return l.o.Filter.Match(e.ns())
}

// prepare drops (with --drop) and creates e's collection with its options, and shards it on
// its shard key.
func (l *loader) prepare(ctx context.Context, e *entry) error {
	db := l.c.Database(e.db)
	if l.o.Drop {
		if err := db.Collection(e.coll).Drop(ctx); err != nil {
			return fmt.Errorf("drop %s: %w", e.ns(), err)
		}
	}
	create := append(bson.D{{Key: "create", Value: e.coll}}, e.meta.Options...)
	if err := db.RunCommand(ctx, create).Err(); err != nil && !isCode(err, 48) { // NamespaceExists: load into it
		return fmt.Errorf("create %s with options %v: %w", e.ns(), e.meta.Options, err)
	}
	if len(e.meta.ShardKey) == 0 {
		return nil
	}
	cmd := bson.D{{Key: "shardCollection", Value: e.ns()}, {Key: "key", Value: e.meta.ShardKey}}
	if err := l.c.Database("admin").RunCommand(ctx, cmd).Err(); err != nil {
		return fmt.Errorf("shardCollection %s on %v: %w", e.ns(), e.meta.ShardKey, err)
	}
	return nil
}

// isCode reports whether err is a server error with code.
func isCode(err error, code int) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorCode(code)
}

// add queues one document of ns, inserting the batch when it is full.
func (l *loader) add(ctx context.Context, ns string, d []byte) error {
	bar := l.bars[ns]
	if bar == nil {
		// A dump does not say how many documents it holds: the bar counts them.
		bar = progress.New(logOrDiscard(l.o.Log), l.byNS[ns].ns(), -1)
		l.bars[ns] = bar
	}
	bar.Add(1)
	l.batch[ns] = append(l.batch[ns], bson.Raw(d))
	l.size[ns] += len(d)
	if len(l.batch[ns]) < batchDocs && l.size[ns] < batchBytes {
		return nil
	}
	return l.flush(ctx, ns)
}

// flush inserts ns's queued documents, unordered; documents the server refuses are
// counted and the first few reported, and the rest go in.
func (l *loader) flush(ctx context.Context, ns string) error {
	docs := l.batch[ns]
	if len(docs) == 0 {
		return nil
	}
	l.batch[ns], l.size[ns] = nil, 0
	e := l.byNS[ns]
	res, err := l.c.Database(e.db).Collection(e.coll).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	c := l.counts[ns]
	if res != nil {
		c[0] += int64(len(res.InsertedIDs))
	}
	var bwe mongo.BulkWriteException
	switch {
	case errors.As(err, &bwe) && bwe.WriteConcernError == nil:
		c[1] += int64(len(bwe.WriteErrors))
		for _, we := range bwe.WriteErrors {
			if l.reports++; l.reports <= 10 {
				say(l.o.Log, "%s: document %s refused: %s\n", ns, docID(docs[we.Index]), we.Message)
			}
		}
	case err != nil:
		return fmt.Errorf("insert into %s: %w", e.ns(), err)
	}
	l.counts[ns] = c
	return nil
}

// docID prints a document's _id for a message.
func docID(d any) string {
	raw, _ := d.(bson.Raw)
	if v, err := raw.LookupErr("_id"); err == nil {
		return v.String()
	}
	return "(no _id)"
}

// finish inserts ns's last batch and builds its indexes; it runs once per namespace.
func (l *loader) finish(ctx context.Context, ns string) error {
	e := l.byNS[ns]
	if e == nil {
		return nil
	}
	if err := l.flush(ctx, ns); err != nil {
		return err
	}
	if bar := l.bars[ns]; bar != nil {
		bar.Done()
		delete(l.bars, ns)
	}
	delete(l.byNS, ns)
	c := l.counts[ns]
	l.res.Loaded += c[0]
	l.res.Failed += c[1]
	if specs := e.meta.indexesToCreate(); len(specs) > 0 && !l.o.NoIndexRestore {
		cmd := bson.D{{Key: "createIndexes", Value: e.coll}, {Key: "indexes", Value: specs}}
		if err := l.c.Database(e.db).RunCommand(ctx, cmd).Err(); err != nil {
			return fmt.Errorf("createIndexes on %s: %w", e.ns(), err)
		}
	}
	say(l.o.Log, "loaded %d documents into %s (%d failed), %d indexes\n", c[0], e.ns(), c[1], len(e.meta.indexesToCreate()))
	return nil
}

// view creates a view from its metadata (viewOn, pipeline, collation), after dropping it
// with --drop.
func (l *loader) view(ctx context.Context, e *entry) error {
	db := l.c.Database(e.db)
	if l.o.Drop {
		if err := db.Collection(e.coll).Drop(ctx); err != nil {
			return fmt.Errorf("drop %s: %w", e.ns(), err)
		}
	}
	if err := db.RunCommand(ctx, append(bson.D{{Key: "create", Value: e.coll}}, e.meta.Options...)).Err(); err != nil {
		return fmt.Errorf("create view %s: %w", e.ns(), err)
	}
	say(l.o.Log, "created view %s\n", e.ns())
	return nil
}
