package dump

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/cleavedb/cleave/tools/archive"
	"github.com/cleavedb/cleave/tools/progress"
)

// segmentBytes is how many bytes of documents an archive segment holds at most (one
// document may take it over).
const segmentBytes = 4 << 20

// ToolVersion is what dumps name as their tool in an archive's header.
const ToolVersion = "cleave-dump"

// dumpDir writes each namespace's files under o.Out.
func dumpDir(ctx context.Context, c *mongo.Client, o Options, nss []namespace, filter bson.D) error {
	out := o.Out
	if out == "" {
		out = "dump"
	}
	for _, ns := range nss {
		dir := filepath.Join(out, ns.db)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		base := filepath.Join(dir, fileName(ns.coll))
		js, err := ns.meta.MarshalJSON()
		if err != nil {
			return fmt.Errorf("%s.%s: metadata: %w", ns.db, ns.coll, err)
		}
		if err := writeFile(nameGz(base+".metadata.json", o.Gzip), o.Gzip, func(w io.Writer) error { _, err := w.Write(js); return err }); err != nil {
			return err
		}
		if ns.meta.Type == "view" {
			say(o.Log, "dumped view %s.%s\n", ns.db, ns.coll)
			continue
		}
		var n int64
		err = writeFile(nameGz(base+".bson", o.Gzip), o.Gzip, func(w io.Writer) error {
			return eachDoc(ctx, c, o, ns, filter, func(doc []byte) error {
				n++
				_, err := w.Write(doc)
				return err
			})
		})
		if err != nil {
			return err
		}
		say(o.Log, "dumped %d documents from %s.%s\n", n, ns.db, ns.coll)
	}
	return nil
}

// nameGz is name with mongodump's ".gz" when gz.
func nameGz(name string, gz bool) string {
	if gz {
		return name + ".gz"
	}
	return name
}

// writeFile creates name and fills it with fill, gzipped when gz.
func writeFile(name string, gz bool, fill func(io.Writer) error) (err error) {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := fillTo(f, gz, fill); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// fillTo runs fill on a buffered (and when gz, gzipping) writer over w, and flushes it.
func fillTo(w io.Writer, gz bool, fill func(io.Writer) error) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	if !gz {
		if err := fill(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	zw := gzip.NewWriter(bw)
	if err := fill(zw); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// eachDoc calls fn with every document of ns that filter matches, in the server's natural
// order, as mongodump reads them; in o's snapshot session when there is one (every
// collection at one cluster time). Its progress goes to o.Log.
func eachDoc(ctx context.Context, c *mongo.Client, o Options, ns namespace, filter bson.D, fn func([]byte) error) error {
	if o.session != nil {
		ctx = mongo.NewSessionContext(ctx, o.session)
	}
	total := ns.count
	if len(filter) > 0 {
		total = -1 // a query selects an unknown part
	}
	bar := progress.New(logOrDiscard(o.Log), ns.db+"."+ns.coll, total)
	defer bar.Done()
	cur, err := c.Database(ns.db).Collection(ns.coll).Find(ctx, filter)
	if err != nil {
		return fmt.Errorf("find on %s.%s: %w", ns.db, ns.coll, err)
	}
	defer func() { _ = cur.Close(ctx) }()
	for cur.Next(ctx) {
		if err := fn(cur.Current); err != nil {
			return err
		}
		bar.Add(1)
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("find on %s.%s: %w", ns.db, ns.coll, err)
	}
	return nil
}

// dumpArchive writes every namespace to one archive: the prelude, then each collection's
// documents in segments and its EOF, one collection after another.
func dumpArchive(ctx context.Context, c *mongo.Client, o Options, nss []namespace, filter bson.D) error {
	var colls []archive.CollectionMetadata
	for _, ns := range nss {
		js, err := ns.meta.MarshalJSON()
		if err != nil {
			return fmt.Errorf("%s.%s: metadata: %w", ns.db, ns.coll, err)
		}
		colls = append(colls, archive.CollectionMetadata{DB: ns.db, Collection: ns.coll, Metadata: string(js), Size: ns.size, Type: ns.meta.Type})
	}
	return withArchiveOut(o, func(w io.Writer) error {
		aw, err := archive.NewWriter(w, archive.Header{ConcurrentCollections: 1, ServerVersion: serverVersion(ctx, c), ToolVersion: ToolVersion}, colls)
		if err != nil {
			return err
		}
		for _, ns := range nss {
			if ns.meta.Type == "view" {
				continue
			}
			if err := archiveColl(ctx, c, o, aw, ns, filter); err != nil {
				return err
			}
		}
		return nil
	})
}

// archiveColl writes ns's documents as segments of about segmentBytes, then its EOF.
func archiveColl(ctx context.Context, c *mongo.Client, o Options, aw *archive.Writer, ns namespace, filter bson.D) error {
	var batch [][]byte
	size, n := 0, 0
	err := eachDoc(ctx, c, o, ns, filter, func(doc []byte) error {
		batch = append(batch, append([]byte(nil), doc...))
		size += len(doc)
		n++
		if size < segmentBytes {
			return nil
		}
		err := aw.Segment(ns.db, ns.coll, batch)
		batch, size = batch[:0], 0
		return err
	})
	if err != nil {
		return err
	}
	if err := aw.Segment(ns.db, ns.coll, batch); err != nil {
		return err
	}
	say(o.Log, "dumped %d documents from %s.%s\n", n, ns.db, ns.coll)
	return aw.EOF(ns.db, ns.coll)
}

// withArchiveOut opens o.Archive ("-" is o.Stdout), gzipped with o.Gzip, for fill.
func withArchiveOut(o Options, fill func(io.Writer) error) error {
	if o.Archive == "-" {
		return fillTo(o.Stdout, o.Gzip, fill)
	}
	return writeFile(o.Archive, o.Gzip, fill)
}

// serverVersion is the server's version, for the archive header; "" when it does not say.
func serverVersion(ctx context.Context, c *mongo.Client) string {
	var info struct {
		Version string `bson:"version"`
	}
	_ = c.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info)
	return info.Version
}

// say prints a progress line to w, if any.
func say(w io.Writer, format string, args ...any) {
	if w != nil {
		_, _ = fmt.Fprintf(w, format, args...)
	}
}

// logOrDiscard is w, or io.Discard when nil.
func logOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
