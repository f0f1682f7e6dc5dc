package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Change records that carry a document. An insert's record carries the document inserted, but
// copying it into the log wrote every inserted byte twice (WAL, memtable, flush, compaction):
// +40% server CPU per insertMany. So a record added with AddChangeDoc refers to the document
// instead (its key), and a reference marker 'r' | docKey → ts | pos says that the record at
// (ts, pos) still reads the document's current version. The first write that changes or
// deletes the document copies its old version into the record and deletes the marker, in its
// own batch (PreserveDoc; range deletions do it for every marker of their range), so that the
// record reads, in any view of the DB, the document as the insert wrote it. ReadChanges
// resolves references in one snapshot, with the records.
//
// A record's value is its bytes, whose first 4 are their length, little-endian (a BSON
// document's are), then, for a record with a document, refTag and the document's key or
// docTag and the document.
const (
	prefixChangeRef byte = 'r'
	refTag          byte = 'R'
	docTag          byte = 'D'
	batchTag        byte = 'B'
)

// AddChangeDoc adds change record rec, which carries document (coll, hash, id) as this batch
// writes it (SetDoc): ReadChanges returns it with the record. rec starts with its length,
// 4 bytes little-endian.
func (b *Batch) AddChangeDoc(rec []byte, coll CollID, hash uint64, id []byte) {
	b.changes = append(b.changes, rec...)
	b.changes = append(b.changes, refTag)
	b.changes = AppendDocKey(b.changes, coll, hash, id)
	b.changeEnds = append(b.changeEnds, len(b.changes))
	b.refs++
}

// splitChange splits a change record's value into the record and what follows it: the tag
// (0: none) and the document key or document.
func splitChange(v []byte) (rec []byte, tag byte, rest []byte) {
	if len(v) < 4 {
		return v, 0, nil
	}
	n := int(binary.LittleEndian.Uint32(v))
	if n <= 0 || n >= len(v) {
		return v, 0, nil
	}
	return v[:n], v[n], v[n+1:]
}

// appendRefKey appends the reference marker key of document key docKey.
func appendRefKey(dst, docKey []byte) []byte {
	return append(append(dst, prefixChangeRef), docKey...)
}

// setChangeBatch writes the batch's records, stamped ts, in one value (changeBatchKeyLen),
// with their reference markers.
func (b *Batch) setChangeBatch(ts uint64) {
	n := len(b.changes) + 2*len(b.changeEnds)
	for _, doc := range b.kept {
		n += len(doc) + 8
	}
	out := make([]byte, 0, n)
	start := 0
	for i, end := range b.changeEnds {
		v := b.changes[start:end]
		start = end
		rec, tag, docKey := splitChange(v)
		if tag == refTag {
			if doc, ok := b.kept[i]; ok {
				out = binary.AppendUvarint(out, uint64(len(rec)+1+len(doc)))
				out = append(append(append(out, rec...), docTag), doc...)
				continue
			}
			b.setRefMarker(docKey, ChangePos{TS: ts, Pos: uint32(i)}, true)
		}
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	}
	var key [changeBatchKeyLen]byte
	_ = b.pb.Set(appendChangeTSKey(key[:0], ts), out, nil)
}

// setRefMarker writes the marker saying that the record at p refers to document docKey:
// ts | pos, and batchTag when the record is in a batch's value (changeBatchKeyLen).
func (b *Batch) setRefMarker(docKey []byte, p ChangePos, inBatch bool) {
	var val [13]byte
	binary.BigEndian.PutUint64(val[:8], p.TS)
	binary.BigEndian.PutUint32(val[8:], p.Pos)
	n := 12
	if inBatch {
		val[12], n = batchTag, 13
	}
	b.refKey = appendRefKey(b.refKey[:0], docKey)
	_ = b.pb.Set(b.refKey, val[:n], nil)
}

// readRefMarker decodes a marker's value.
func readRefMarker(v []byte) (p ChangePos, inBatch, ok bool) {
	if len(v) != 12 && len(v) != 13 {
		return p, false, false
	}
	p = ChangePos{TS: binary.BigEndian.Uint64(v[:8]), Pos: binary.BigEndian.Uint32(v[8:12])}
	return p, len(v) == 13 && v[12] == batchTag, true
}

// setChange writes the record at p whose value is v (stampChanges): a record referring to a
// document gets its reference marker, or the copy of the document PreserveDoc kept for it.
func (b *Batch) setChange(key []byte, p ChangePos, v []byte) {
	rec, tag, docKey := splitChange(v)
	if tag != refTag {
		_ = b.pb.Set(key, v, nil)
		return
	}
	if doc, ok := b.kept[int(p.Pos)]; ok {
		out := make([]byte, 0, len(rec)+1+len(doc))
		_ = b.pb.Set(key, append(append(append(out, rec...), docTag), doc...), nil)
		return
	}
	_ = b.pb.Set(key, v, nil)
	b.setRefMarker(docKey, p, false)
}

// PreserveDoc tells the batch that it changes or deletes document (coll, hash, id), whose
// current version is old: a change record that refers to the document (AddChangeDoc) gets a
// copy of old first, in this batch. The caller holds the document's key lock, so that no other
// batch preserves the same version concurrently.
func (b *Batch) PreserveDoc(coll CollID, hash uint64, id, old []byte) error {
	docKey := AppendDocKey(nil, coll, hash, id)
	if b.refs > 0 && b.preserveOwn(docKey, old) {
		return nil
	}
	if _, ok := b.preserved[string(docKey)]; ok {
		return nil // an earlier write of the batch preserved the committed version
	}
	var u unmarkedDoc // the words before the Get, to prove no marker later (doccache.go)
	if b.db.docs != nil {
		if u = b.db.docs.unmarked(docKey); u.noMarker {
			b.db.docs.markersSkipped.Add(1) // the cache proves the Get would find none
			b.written.unmarked = append(b.written.unmarked, u)
			return nil
		}
	}
	v, closer, err := b.db.pdb.Get(appendRefKey(nil, docKey))
	if errors.Is(err, pebble.ErrNotFound) {
		b.noteUnmarked(u)
		return nil
	}
	if err != nil {
		return err
	}
	p, inBatch, ok := readRefMarker(v)
	_ = closer.Close()
	if !ok {
		return fmt.Errorf("%w: change reference marker", ErrCorrupt)
	}
	if err := b.copyIntoRecord(p, inBatch, docKey, old); err != nil {
		return err
	}
	if b.preserved == nil {
		b.preserved = make(map[string]struct{})
	}
	b.preserved[string(docKey)] = struct{}{}
	_ = b.direct().Delete(appendRefKey(nil, docKey), nil)
	b.noteUnmarked(u)
	return nil
}

// preserveOwn keeps old for the last record of this batch that refers to docKey without a
// copy yet, and reports whether there was one.
func (b *Batch) preserveOwn(docKey, old []byte) bool {
	start := 0
	found := -1
	for i, end := range b.changeEnds {
		_, tag, k := splitChange(b.changes[start:end])
		start = end
		if _, kept := b.kept[i]; tag == refTag && !kept && bytes.Equal(k, docKey) {
			found = i
		}
	}
	if found < 0 {
		return false
	}
	if b.kept == nil {
		b.kept = make(map[int][]byte)
	}
	b.kept[found] = bytes.Clone(old)
	return true
}

// copyIntoRecord gives the record at p, which refers to docKey, a copy of doc: a record alone
// under its key is rewritten with it; a record in a batch's value (inBatch) gets a patch,
// docTag | doc, under its own key, which the log reads over its place in the batch (the batch's
// value, up to 1000 records of a loaded insertMany, is neither read nor rewritten). A record
// trimmed since is left alone.
func (b *Batch) copyIntoRecord(p ChangePos, inBatch bool, docKey, doc []byte) error {
	if p.TS < b.db.ChangesTrimmed() {
		return nil
	}
	ck := appendChangeKey(nil, p)
	if inBatch {
		_ = b.direct().Set(ck, append([]byte{docTag}, doc...), nil)
		return nil
	}
	v, closer, err := b.db.pdb.Get(ck)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = closer.Close() }()
	rec, tag, k := splitChange(v)
	if tag != refTag || !bytes.Equal(k, docKey) {
		return nil
	}
	out := make([]byte, 0, len(rec)+1+len(doc))
	out = append(append(append(out, rec...), docTag), doc...)
	_ = b.direct().Set(ck, out, nil)
	return nil
}

// preserveChunk bounds the copies preserveRange writes in one batch of their own.
const preserveChunk = 8 << 20

// preserveRange copies, into the records that refer to them, the documents of [lower, upper)
// (document keys) that records refer to, and deletes their markers: the batch range-deletes
// those documents. The copies go in batches of their own of about preserveChunk, committed
// before this one (a drop of a large collection loaded lately would otherwise make this
// batch as large as its data): a copy of a document that does not change meanwhile (nothing
// writes into a range being deleted) reads the same as the reference it replaces, so a
// crash between them leaves the log as it was.
func (b *Batch) preserveRange(lower, upper []byte) error {
	rl, ru := appendRefKey(nil, lower), appendRefKey(nil, upper)
	it, err := b.db.pdb.NewIter(&pebble.IterOptions{LowerBound: rl, UpperBound: ru})
	if err != nil {
		return err
	}
	cb := b.db.NewBatch()
	defer func() { cb.Close() }()
	seen := false
	for ok := it.First(); ok; ok = it.Next() {
		seen = true
		if err := cb.preserveMarked(it.Key(), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
		if cb.pb.Len() >= preserveChunk {
			if err := cb.Commit(false); err != nil {
				_ = it.Close()
				return err
			}
			cb.Close()
			cb = b.db.NewBatch()
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	if err := cb.Commit(false); err != nil { // made durable by this batch's sync
		return err
	}
	if seen {
		_ = b.direct().DeleteRange(rl, ru, nil)
	}
	return nil
}

// preserveMarked copies into its record the document the reference marker (key, value) names,
// and deletes the marker.
func (b *Batch) preserveMarked(key, value []byte) error {
	p, inBatch, ok := readRefMarker(value)
	if !ok {
		return nil
	}
	docKey := bytes.Clone(key[1:])
	doc, closer, err := b.db.pdb.Get(docKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = closer.Close() }()
	if err := b.copyIntoRecord(p, inBatch, docKey, doc); err != nil {
		return err
	}
	_ = b.direct().Delete(bytes.Clone(key), nil)
	return nil
}
