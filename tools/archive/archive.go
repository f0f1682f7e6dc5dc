package archive

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc64"
	"io"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MagicNumber opens every archive (written little-endian: 6d e2 99 81).
const MagicNumber uint32 = 0x8199e26d

// FormatVersion is the only version of the format there is.
const FormatVersion = "0.1"

// terminator ends the prelude and every segment.
const terminator uint32 = 0xffffffff

// maxDocSize bounds a document read from an archive (MongoDB's 16 MiB plus the headroom an
// internal document may take), so a corrupt length fails before allocating.
const maxDocSize = 16*1024*1024 + 16*1024

// ErrFormat is wrapped by every error about a stream that is not a well-formed archive.
var ErrFormat = errors.New("not a mongodump archive")

// crcTable is CRC-64-ECMA, the checksum of a namespace's documents in its EOF header.
var crcTable = crc64.MakeTable(crc64.ECMA)

// Header is the archive's first document.
type Header struct {
	ConcurrentCollections int32  // concurrent_collections: how many namespaces interleave
	Version               string // version: FormatVersion
	ServerVersion         string // server_version: the source server's version
	ToolVersion           string // tool_version: the dumping tool's version
}

// CollectionMetadata is one namespace of the prelude.
type CollectionMetadata struct {
	DB         string // db
	Collection string // collection
	Metadata   string // metadata: the .metadata.json contents (canonical Extended JSON)
	Size       int64  // size: the collection's uncompressed size in bytes (informational)
	Type       string // type: "view", "timeseries" or ""
}

// appendHeader encodes h as the header document.
func appendHeader(dst []byte, h Header) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendInt32Element(dst, "concurrent_collections", h.ConcurrentCollections)
	dst = bsoncore.AppendStringElement(dst, "version", h.Version)
	dst = bsoncore.AppendStringElement(dst, "server_version", h.ServerVersion)
	dst = bsoncore.AppendStringElement(dst, "tool_version", h.ToolVersion)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// appendMetadata encodes m as a prelude document.
func appendMetadata(dst []byte, m CollectionMetadata) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendStringElement(dst, "db", m.DB)
	dst = bsoncore.AppendStringElement(dst, "collection", m.Collection)
	dst = bsoncore.AppendStringElement(dst, "metadata", m.Metadata)
	if m.Size == int64(int32(m.Size)) {
		dst = bsoncore.AppendInt32Element(dst, "size", int32(m.Size))
	} else {
		dst = bsoncore.AppendInt64Element(dst, "size", m.Size)
	}
	dst = bsoncore.AppendStringElement(dst, "type", m.Type)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// appendNamespace encodes a namespace header (eof false, crc 0) or an EOF header.
func appendNamespace(dst []byte, db, coll string, eof bool, crc uint64) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendStringElement(dst, "db", db)
	dst = bsoncore.AppendStringElement(dst, "collection", coll)
	dst = bsoncore.AppendBooleanElement(dst, "EOF", eof)
	dst = bsoncore.AppendInt64Element(dst, "CRC", int64(crc)) // the CRC's bits travel as an int64
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// Writer writes one archive: the prelude when made, then segments and EOFs. It is not safe
// for concurrent use.
type Writer struct {
	w    io.Writer
	crcs map[string]hash.Hash64 // by "db\x00coll": the running CRC of each open namespace
	buf  []byte
}

// NewWriter writes the magic number, h and the prelude of colls to w.
func NewWriter(w io.Writer, h Header, colls []CollectionMetadata) (*Writer, error) {
	if h.Version == "" {
		h.Version = FormatVersion
	}
	buf := binary.LittleEndian.AppendUint32(nil, MagicNumber)
	buf = appendHeader(buf, h)
	for _, m := range colls {
		buf = appendMetadata(buf, m)
	}
	buf = binary.LittleEndian.AppendUint32(buf, terminator)
	if _, err := w.Write(buf); err != nil {
		return nil, err
	}
	return &Writer{w: w, crcs: map[string]hash.Hash64{}}, nil
}

// Segment writes docs (each a whole BSON document) as one segment of db.coll; an empty docs
// writes nothing, since a segment holds at least one document.
func (w *Writer) Segment(db, coll string, docs [][]byte) error {
	if len(docs) == 0 {
		return nil
	}
	key := db + "\x00" + coll
	h := w.crcs[key]
	if h == nil {
		h = crc64.New(crcTable)
		w.crcs[key] = h
	}
	w.buf = appendNamespace(w.buf[:0], db, coll, false, 0)
	for _, d := range docs {
		w.buf = append(w.buf, d...)
		_, _ = h.Write(d) // a hash never fails
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, terminator)
	_, err := w.w.Write(w.buf)
	return err
}

// EOF closes db.coll with the CRC of every document its segments held.
func (w *Writer) EOF(db, coll string) error {
	key := db + "\x00" + coll
	var crc uint64
	if h := w.crcs[key]; h != nil {
		crc = h.Sum64()
	}
	delete(w.crcs, key)
	w.buf = appendNamespace(w.buf[:0], db, coll, true, crc)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, terminator)
	_, err := w.w.Write(w.buf)
	return err
}

// formatError wraps ErrFormat with what was wrong.
func formatError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// readDoc reads one BSON document, or reports the terminator with doc nil.
func readDoc(r *bufio.Reader, what string) (doc []byte, err error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(n[:])
	if size == terminator {
		return nil, nil
	}
	if size < 5 || size > maxDocSize {
		return nil, formatError("%s: a document of %d bytes", what, size)
	}
	doc = make([]byte, size)
	copy(doc, n[:])
	if _, err := io.ReadFull(r, doc[4:]); err != nil {
		return nil, unexpected(err)
	}
	if err := bsoncore.Document(doc).Validate(); err != nil {
		return nil, formatError("%s: %v", what, err)
	}
	return doc, nil
}

// unexpected turns a clean end of stream in the middle of something into a truncation error.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return formatError("truncated")
	}
	return err
}
