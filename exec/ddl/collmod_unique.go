package ddl

import (
	"bytes"
	"errors"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Converting an index to unique, MongoDB's two steps: collMod {index: {prepareUnique: true}}
// makes writers refuse new duplicate keys (checkNewKeys) while the duplicates the index
// has stay; collMod {index: {unique: true}} then scans the index for duplicates
// (indexDuplicates) and either fails with CannotConvertIndexToUnique and the _ids of each
// group, or marks the index unique. Between the two, a barrier makes sure that every
// writer still to come checks the keys, so the scan sees every duplicate there will be.

// indexEntry is one entry of an index scan: its key and document.
type indexEntry struct {
	key, id []byte
	hash    uint64
	shard   int
}

// indexCursor walks one shard's entries of an index in key order.
type indexCursor struct {
	it    catalog.IndexIter
	shard int
	cur   *indexEntry
}

// advance moves c to its next entry (cur nil at the end).
func (c *indexCursor) advance() {
	c.cur = nil
	if c.it.Next() {
		c.cur = &indexEntry{key: append([]byte(nil), c.it.Key()...), id: append([]byte(nil), c.it.ID()...),
			hash: c.it.Hash(), shard: c.shard}
	}
}

// maxViolationBytes bounds the _ids a CannotConvertIndexToUnique reply lists (MongoDB: 8 MB).
const maxViolationBytes = wire.MaxBSONSize / 2

// Duplicates scans index xi of ci on every shard, merging the shards' entries in key
// order, and returns the groups of documents that share a key as {ids: [...]} documents.
// truncated reports that the groups stopped at maxViolationBytes.
func (x *Runner) Duplicates(ci *catalog.Coll, xi *catalog.Index) (groups []bsoncore.Document, truncated bool, err error) {
	var curs []*indexCursor
	defer func() {
		for _, c := range curs {
			err = errors.Join(err, c.it.Close())
		}
	}()
	for s, db := range x.cat.Shards() {
		it, err := db.NewIndexIter(ci.Meta.ID, xi.Meta.ID, nil, nil, false)
		if err != nil {
			return nil, false, catalog.StoreError(err)
		}
		c := &indexCursor{it: it, shard: s}
		curs = append(curs, c)
		c.advance()
	}
	size := 0
	for {
		group := nextKeyGroup(curs)
		if group == nil {
			break
		}
		if len(group) < 2 {
			continue
		}
		d, n, err := x.violation(ci, group, maxViolationBytes-size)
		if err != nil {
			return nil, false, err
		}
		if d != nil {
			groups = append(groups, d)
		}
		if size += n; size >= maxViolationBytes {
			return groups, true, nil
		}
	}
	for _, c := range curs {
		if err := c.it.Err(); err != nil {
			return nil, false, catalog.StoreError(err)
		}
	}
	return groups, false, nil
}

// nextKeyGroup returns the entries of the smallest key among the cursors' current ones
// (advancing past them), nil when every cursor is done.
func nextKeyGroup(curs []*indexCursor) []*indexEntry {
	var smallest []byte
	for _, c := range curs {
		if c.cur != nil && (smallest == nil || bytes.Compare(c.cur.key, smallest) < 0) {
			smallest = c.cur.key
		}
	}
	if smallest == nil {
		return nil
	}
	var group []*indexEntry
	for _, c := range curs {
		for c.cur != nil && bytes.Equal(c.cur.key, smallest) {
			group = append(group, c.cur)
			c.advance()
		}
	}
	return group
}

// violation builds {ids: [...]} for the documents of one duplicate group, listing _ids up
// to room bytes (at least one), and returns how many bytes of _ids it used.
func (x *Runner) violation(ci *catalog.Coll, group []*indexEntry, room int) (bsoncore.Document, int, error) {
	idx, d := bsoncore.AppendDocumentStart(nil)
	aidx, d := bsoncore.AppendArrayElementStart(d, "ids")
	n, used := 0, 0
	seen := map[string]bool{}
	for _, ent := range group {
		k := strconv.FormatUint(ent.hash, 16) + "|" + string(ent.id)
		if seen[k] {
			continue // one document with the key twice (an array) is no duplicate
		}
		seen[k] = true
		doc, err := x.cat.Shards()[ent.shard].GetDoc(ci.Meta.ID, ent.hash, ent.id, nil)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, 0, catalog.StoreError(err)
		}
		id, _ := catalog.FirstValue(doc, "_id")
		if n > 0 && used+len(id.Data) > room {
			break
		}
		d = bsoncore.AppendValueElement(d, strconv.Itoa(n), id)
		n++
		used += len(id.Data)
	}
	d, _ = bsoncore.AppendArrayEnd(d, aidx)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	if n < 2 {
		return nil, used, nil
	}
	return d, used, nil
}

// ConvertUniqueError is MongoDB's CannotConvertIndexToUnique with its violations.
func ConvertUniqueError(groups []bsoncore.Document, truncated bool) error {
	msg := "Cannot convert the index to unique. Please resolve conflicting documents before running collMod again."
	if truncated {
		msg = "Cannot convert the index to unique. Too many conflicting documents were detected. Please resolve them and rerun collMod."
	}
	e := mongoerr.New(mongoerr.CannotConvertIndexToUnique, "%s", msg)
	idx, info := bsoncore.AppendDocumentStart(nil)
	aidx, info := bsoncore.AppendArrayElementStart(info, "violations")
	for i, g := range groups {
		info = bsoncore.AppendDocumentElement(info, strconv.Itoa(i), g)
	}
	info, _ = bsoncore.AppendArrayEnd(info, aidx)
	e.Info, _ = bsoncore.AppendDocumentEnd(info, idx)
	return e
}
