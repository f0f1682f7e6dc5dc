package archive

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash"
	"hash/crc64"
	"io"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Item is what Reader.Next returns: one document of a namespace, or its end (EOF true, Doc
// nil, the CRC checked).
type Item struct {
	DB, Collection string
	Doc            []byte
	EOF            bool
}

// Reader reads an archive: the prelude when made, then the body's documents one by one.
type Reader struct {
	r      *bufio.Reader
	header Header
	colls  []CollectionMetadata
	db     string // the namespace of the segment being read; "" between segments
	coll   string
	inSeg  bool
	crcs   map[string]hash.Hash64
}

// NewReader reads the magic number and the prelude from r.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var magic [4]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil {
		return nil, formatError("no magic number: %v", err)
	}
	if got := binary.LittleEndian.Uint32(magic[:]); got != MagicNumber {
		return nil, formatError("magic number %#x, want %#x", got, MagicNumber)
	}
	ar := &Reader{r: br, crcs: map[string]hash.Hash64{}}
	doc, err := readDoc(br, "header")
	if err != nil || doc == nil {
		return nil, orFormat(err, "no header")
	}
	ar.header = parseHeader(doc)
	for {
		doc, err := readDoc(br, "prelude")
		if err != nil {
			return nil, unexpected(err)
		}
		if doc == nil {
			return ar, nil
		}
		m, err := parseMetadata(doc)
		if err != nil {
			return nil, err
		}
		ar.colls = append(ar.colls, m)
	}
}

// Header is the archive's header.
func (r *Reader) Header() Header { return r.header }

// Collections is the prelude: every namespace's metadata, in the archive's order.
func (r *Reader) Collections() []CollectionMetadata { return r.colls }

// Next returns the next document or namespace end, and io.EOF after the last.
func (r *Reader) Next() (Item, error) {
	for {
		doc, err := readDoc(r.r, "body")
		if err != nil {
			if errors.Is(err, io.EOF) && !r.inSeg {
				return Item{}, io.EOF
			}
			return Item{}, unexpected(err)
		}
		switch {
		case doc == nil && r.inSeg:
			r.inSeg = false
			continue
		case doc == nil:
			return Item{}, formatError("a terminator with no namespace header before it")
		case r.inSeg:
			_, _ = r.crc(r.db, r.coll).Write(doc) // a hash never fails
			return Item{DB: r.db, Collection: r.coll, Doc: doc}, nil
		}
		db, coll, eof, crc, err := parseNamespace(doc)
		if err != nil {
			return Item{}, err
		}
		if !eof {
			r.db, r.coll, r.inSeg = db, coll, true
			continue
		}
		return r.end(db, coll, crc)
	}
}

// end reads the terminator after an EOF header and checks the namespace's CRC.
func (r *Reader) end(db, coll string, crc uint64) (Item, error) {
	t, err := readDoc(r.r, "body")
	if err != nil || t != nil {
		return Item{}, orFormat(unexpected(err), "no terminator after the EOF of "+db+"."+coll)
	}
	if got := r.crc(db, coll).Sum64(); got != crc {
		return Item{}, formatError("%s.%s: CRC %#x of its documents, the archive says %#x", db, coll, got, crc)
	}
	delete(r.crcs, db+"\x00"+coll)
	return Item{DB: db, Collection: coll, EOF: true}, nil
}

// crc is the running CRC of db.coll's documents.
func (r *Reader) crc(db, coll string) hash.Hash64 {
	key := db + "\x00" + coll
	h := r.crcs[key]
	if h == nil {
		h = crc64.New(crcTable)
		r.crcs[key] = h
	}
	return h
}

// orFormat returns err, or a format error saying what when err is nil.
func orFormat(err error, what string) error {
	if err != nil {
		return err
	}
	return formatError("%s", what)
}

// parseHeader reads the header document's fields, ignoring any it does not know.
func parseHeader(doc bsoncore.Document) Header {
	var h Header
	h.ConcurrentCollections, _ = doc.Lookup("concurrent_collections").AsInt32OK()
	h.Version, _ = doc.Lookup("version").StringValueOK()
	h.ServerVersion, _ = doc.Lookup("server_version").StringValueOK()
	h.ToolVersion, _ = doc.Lookup("tool_version").StringValueOK()
	return h
}

// parseMetadata reads a prelude document; db and collection are required.
func parseMetadata(doc bsoncore.Document) (CollectionMetadata, error) {
	var m CollectionMetadata
	var ok bool
	if m.DB, ok = doc.Lookup("db").StringValueOK(); !ok {
		return m, formatError("a prelude document without db")
	}
	if m.Collection, ok = doc.Lookup("collection").StringValueOK(); !ok {
		return m, formatError("a prelude document without collection")
	}
	m.Metadata, _ = doc.Lookup("metadata").StringValueOK()
	m.Size, _ = doc.Lookup("size").AsInt64OK()
	m.Type, _ = doc.Lookup("type").StringValueOK()
	return m, nil
}

// parseNamespace reads a namespace or EOF header.
func parseNamespace(doc bsoncore.Document) (db, coll string, eof bool, crc uint64, err error) {
	var ok bool
	if db, ok = doc.Lookup("db").StringValueOK(); !ok {
		return "", "", false, 0, formatError("a namespace header without db")
	}
	if coll, ok = doc.Lookup("collection").StringValueOK(); !ok {
		return "", "", false, 0, formatError("a namespace header without collection")
	}
	eof, _ = doc.Lookup("EOF").BooleanOK()
	if v, ok := doc.Lookup("CRC").Int64OK(); ok {
		crc = uint64(v) // the CRC's bits travel as an int64
	}
	return db, coll, eof, crc, nil
}
