// Package archive reads and writes mongodump's archive format (`mongodump --archive`), the
// single stream that holds a dump's metadata and every collection's documents, so that an
// archive written here restores with mongorestore and one written by mongodump loads here.
//
// The format, from mongo-tools' common/archive/spec.md (implemented from the spec, not the
// code):
//
//	archive  = magic header *collection-metadata terminator *(segment | eof)
//	magic    = 0x8199e26d, little-endian
//	segment  = {db, collection, EOF: false, CRC: 0} +document terminator
//	eof      = {db, collection, EOF: true, CRC: crc64-ECMA of the namespace's documents} terminator
//	terminator = 0xffffffff
//
// Segments of different namespaces may interleave; a namespace's documents may span several
// segments, and its CRC covers them all in order. The package knows no collections or
// servers: it moves documents as raw bytes, and the metadata as the canonical Extended JSON
// string mongodump puts there.
//
// Invariant: Reader returns every document Writer was given, in order per namespace, and
// refuses a stream whose EOF CRC disagrees with the documents it returned.
//
//	w, _ := archive.NewWriter(out, archive.Header{Version: "0.1"}, colls)
//	_ = w.Segment("db", "c", docs)
//	_ = w.EOF("db", "c")
//	r, _ := archive.NewReader(in)
//	for item, err := r.Next(); err == nil; item, err = r.Next() { … }
package archive
