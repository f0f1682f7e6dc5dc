package dump

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/tools/archive"
)

// maxDocSize bounds a document read from a .bson file, so a corrupt length fails before
// allocating: MongoDB's 16 MiB and the headroom of its internal documents.
const maxDocSize = 16*1024*1024 + 16*1024

// entry is one namespace of a dump being read.
type entry struct {
	db, coll string
	meta     Metadata
	file     string // a directory's .bson(.gz) file; "" when it has none
}

// ns is the entry's "db.coll".
func (e *entry) ns() string { return e.db + "." + e.coll }

// source is a dump being read: its namespaces up front, then their documents.
type source interface {
	entries() []*entry
	// documents calls doc for each document of the namespaces keep selects, and end once a
	// namespace has no more.
	documents(keep func(ns string) bool, doc func(ns string, d []byte) error, end func(ns string) error) error
}

// readDir reads a mongodump directory: <root>/<db>/<files>, or, when root holds the files
// themselves, one database's directory named db (or after root).
func readDir(root, db string) (*dirSource, error) {
	list, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	s := &dirSource{}
	flat := slices.ContainsFunc(list, func(d os.DirEntry) bool {
		n := strings.TrimSuffix(d.Name(), ".gz")
		return !d.IsDir() && (strings.HasSuffix(n, ".bson") || strings.HasSuffix(n, ".metadata.json")) && n != "oplog.bson"
	})
	if flat {
		if db == "" {
			db = filepath.Base(root)
		}
		return s, s.readDB(root, db)
	}
	for _, d := range list {
		if d.IsDir() {
			if err := s.readDB(filepath.Join(root, d.Name()), d.Name()); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// dirSource is a dump directory.
type dirSource struct{ list []*entry }

// readDB adds the namespaces of one database's directory.
func (s *dirSource) readDB(dir, db string) error {
	files, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	byName := map[string]*entry{}
	get := func(base string) *entry {
		if byName[base] == nil {
			byName[base] = &entry{db: db, coll: collName(base)}
			s.list = append(s.list, byName[base])
		}
		return byName[base]
	}
	for _, f := range files {
		name, path := f.Name(), filepath.Join(dir, f.Name())
		plain := strings.TrimSuffix(name, ".gz")
		switch {
		case f.IsDir() || strings.HasPrefix(name, "$"):
		case strings.HasSuffix(plain, ".metadata.json"):
			data, err := readSmall(path)
			if err != nil {
				return err
			}
			e := get(strings.TrimSuffix(plain, ".metadata.json"))
			if e.meta, err = parseMetadata(data, path); err != nil {
				return err
			}
			if e.meta.CollectionName != "" {
				e.coll = e.meta.CollectionName
			}
		case strings.HasSuffix(plain, ".bson"):
			get(strings.TrimSuffix(plain, ".bson")).file = path
		}
	}
	return s.legacyViews(db)
}

// legacyViews turns a system.views.bson (dumps of servers before 3.6's listCollections
// views) into view entries.
func (s *dirSource) legacyViews(db string) error {
	i := slices.IndexFunc(s.list, func(e *entry) bool { return e.db == db && e.coll == "system.views" })
	if i < 0 {
		return nil
	}
	file := s.list[i].file
	s.list = slices.Delete(s.list, i, i+1)
	if file == "" {
		return nil
	}
	return eachFileDoc(file, func(d []byte) error {
		var v bson.D
		if err := bson.Unmarshal(d, &v); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		var id string
		opts := slices.DeleteFunc(v, func(e bson.E) bool {
			if e.Key == "_id" {
				id, _ = e.Value.(string)
			}
			return e.Key == "_id"
		})
		_, name, _ := strings.Cut(id, ".")
		s.list = append(s.list, &entry{db: db, coll: name, meta: Metadata{Type: "view", Options: opts, CollectionName: name}})
		return nil
	})
}

// entries lists the directory's namespaces.
func (s *dirSource) entries() []*entry { return s.list }

// documents reads each selected collection's .bson file in turn.
func (s *dirSource) documents(keep func(string) bool, doc func(string, []byte) error, end func(string) error) error {
	for _, e := range s.list {
		if !keep(e.ns()) || e.meta.Type == "view" {
			continue
		}
		if e.file != "" {
			if err := eachFileDoc(e.file, func(d []byte) error { return doc(e.ns(), d) }); err != nil {
				return err
			}
		}
		if err := end(e.ns()); err != nil {
			return err
		}
	}
	return nil
}

// openMaybeGzip buffers r, decompressing it when it starts with gzip's magic bytes (so
// --gzip need not be given to read a gzipped dump).
func openMaybeGzip(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		return gzip.NewReader(br)
	}
	return br, nil
}

// readSmall reads a whole (possibly gzipped) metadata file.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	r, err := openMaybeGzip(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(r)
}

// eachFileDoc calls fn with each document of a (possibly gzipped) .bson file.
func eachFileDoc(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	r, err := openMaybeGzip(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for n := 0; ; n++ {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: document %d: %w", path, n, err)
		}
		l := binary.LittleEndian.Uint32(size[:])
		if l < 5 || l > maxDocSize {
			return fmt.Errorf("%s: document %d: a length of %d bytes: not a BSON file", path, n, l)
		}
		d := make([]byte, l)
		copy(d, size[:])
		if _, err := io.ReadFull(r, d[4:]); err != nil {
			return fmt.Errorf("%s: document %d: truncated: %w", path, n, err)
		}
		if err := bsoncore.Document(d).Validate(); err != nil {
			return fmt.Errorf("%s: document %d: %w", path, n, err)
		}
		if err := fn(d); err != nil {
			return err
		}
	}
}

// archiveSource is a mongodump archive.
type archiveSource struct {
	r    *archive.Reader
	list []*entry
}

// readArchive reads an archive's prelude from r (gzipped or not).
func readArchive(r io.Reader) (*archiveSource, error) {
	zr, err := openMaybeGzip(r)
	if err != nil {
		return nil, err
	}
	ar, err := archive.NewReader(zr)
	if err != nil {
		return nil, err
	}
	s := &archiveSource{r: ar}
	for _, m := range ar.Collections() {
		meta, err := parseMetadata([]byte(m.Metadata), "the metadata of "+m.DB+"."+m.Collection)
		if err != nil {
			return nil, err
		}
		if meta.Type == "" {
			meta.Type = m.Type
		}
		s.list = append(s.list, &entry{db: m.DB, coll: m.Collection, meta: meta})
	}
	return s, nil
}

// entries lists the archive's prelude.
func (s *archiveSource) entries() []*entry { return s.list }

// documents reads the archive's body, its namespaces interleaved as written.
func (s *archiveSource) documents(keep func(string) bool, doc func(string, []byte) error, end func(string) error) error {
	for {
		it, err := s.r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		ns := it.DB + "." + it.Collection
		switch {
		case !keep(ns):
		case it.EOF:
			err = end(ns)
		default:
			err = doc(ns, it.Doc)
		}
		if err != nil {
			return err
		}
	}
}
