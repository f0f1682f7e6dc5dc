package write

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// checkUniques fails with E11000 when w's new document would take a unique key another
// document holds: its _id in the logical partition it moves to (its shard key changed), or
// a key of a unique index.
func (wr *Writer) checkUniques(w *DocWrite, newShard int, newHash uint64) error {
	ci := wr.ci
	if w.Old != nil && w.New != nil && newHash != w.Hash && ci.IDIndexed && ci.TS == nil {
		if err := wr.checkIDFreeAt(w, newHash); err != nil {
			return err
		}
	}
	if w.New != nil {
		for _, xi := range ci.WriteUniques {
			if err := wr.checkUnique(xi, newShard, newHash, w); err != nil {
				return err
			}
		}
	}
	return nil
}

// stagedKey is the staged map's key for a unique index key on a shard.
func (wr *Writer) stagedKey(s int, xi *catalog.Index, key []byte) string {
	wr.keybuf = binary.BigEndian.AppendUint32(wr.keybuf[:0], uint32(s))
	wr.keybuf = binary.BigEndian.AppendUint32(wr.keybuf, uint32(xi.Meta.ID))
	wr.keybuf = append(wr.keybuf, key...)
	return string(wr.keybuf)
}

// markStaged records that a staged write gave key of unique index xi to id (nil: removed it).
func (wr *Writer) markStaged(s int, xi *catalog.Index, key, id []byte) {
	if wr.staged == nil {
		wr.staged = map[string][]byte{}
	}
	wr.staged[wr.stagedKey(s, xi, key)] = id
}

// checkUnique fails with E11000 when a key w.new takes in unique index xi is held by
// another document, in the store or among the writes staged before.
func (wr *Writer) checkUnique(xi *catalog.Index, s int, _ uint64, w *DocWrite) error {
	if xi.PrepareUnique { // collMod's prepareUnique keeps the duplicates it has (exec/ddl/collmod_unique.go)
		return wr.checkNewKeys(xi, s, w)
	}
	db := wr.p.shardList()[s]
	return xi.Keys(w.New, func(key []byte) error {
		if holder, ok := wr.staged[wr.stagedKey(s, xi, key)]; ok {
			if holder != nil && !bytes.Equal(holder, w.ID) {
				return wr.DupKeyError(xi, w.New)
			}
			return nil
		}
		_, id, found, err := db.HasIndexKeyPrefix(wr.ci.Meta.ID, xi.Meta.ID, key)
		if err != nil {
			return err
		}
		if found && !bytes.Equal(id, w.ID) {
			return wr.DupKeyError(xi, w.New)
		}
		return nil
	})
}

// DupKeyError is MongoDB's E11000 for doc colliding in index xi, with keyPattern and
// keyValue.
func (wr *Writer) DupKeyError(xi *catalog.Index, doc bsoncore.Document) error {
	vidx, kv := bsoncore.AppendDocumentStart(nil)
	var desc bytes.Buffer
	desc.WriteString("{ ")
	for i, f := range xi.Fields {
		v, ok := bsonx.Lookup(doc, f.Path)
		if !ok {
			v = bsoncore.Value{Type: bsoncore.TypeNull}
		}
		kv = bsoncore.AppendValueElement(kv, f.Path, v)
		if i > 0 {
			desc.WriteString(", ")
		}
		fmt.Fprintf(&desc, "%s: %s", f.Path, bsonx.ShellString(v))
	}
	desc.WriteString(" }")
	kv, _ = bsoncore.AppendDocumentEnd(kv, vidx)
	iidx, info := bsoncore.AppendDocumentStart(nil)
	info = bsoncore.AppendDocumentElement(info, "keyPattern", xi.Meta.Key)
	info = bsoncore.AppendDocumentElement(info, "keyValue", kv)
	info, _ = bsoncore.AppendDocumentEnd(info, iidx)
	name := xi.Meta.Name
	if c, ok := xi.Meta.Spec.Lookup("collation").DocumentOK(); ok && xi.Collation != nil {
		name += " collation: " + bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: c})
	}
	e := mongoerr.New(mongoerr.DuplicateKey, "E11000 duplicate key error collection: %s index: %s dup key: %s",
		wr.ci.NS(), name, desc.String())
	e.Info = info
	return e
}

// CheckIDFree fails with E11000 on the _id index when a document with w's _id exists (an
// insert). The caller holds the document's key lock, taken by Lock before the writer's first
// check: the shard's probe, opened then, must see every write committed before the lock.
func (wr *Writer) CheckIDFree(w *DocWrite) error {
	ci := wr.ci
	if ci.TS != nil {
		return nil // a time-series collection has no unique _id (timeseries.go)
	}
	return wr.checkIDFreeAt(w, w.Hash)
}

// checkIDFreeAt fails with E11000 when the logical partition at hash already holds w's _id,
// in the store or among the writes staged before. _id is unique per logical partition (one
// shard-key value), not per collection, as in Cosmos DB: in a collection sharded on another
// field two shard-key values may hold the same _id, so the _id index is checked for the
// entry (_id, hash), not for the _id alone; an unsharded collection, or one sharded on _id,
// has one global _id.
func (wr *Writer) checkIDFreeAt(w *DocWrite, hash uint64) error {
	ci := wr.ci
	s := ci.Map.Partition(ci.Map.Locate(hash)).Shard
	ik := wr.idIndexKey(w)
	if holder, ok := wr.staged[wr.stagedKey(s, ci.Indexes[0], wr.idKey(ik, hash))]; ok && holder != nil {
		return wr.DupKeyError(ci.Indexes[0], w.New)
	}
	// One probe per shard for all the checks of the writer (an insertMany's 100 _ids), not
	// an iterator each. Without an _id index it looks the document up, reading neither its
	// value nor, thanks to the bloom filters, the data block where the key would be.
	p, err := wr.probe(s)
	var found bool
	if err == nil && ci.IDIndexed {
		found, err = p.HasIndexKey(ci.Meta.ID, ci.Indexes[0].Meta.ID, wr.idKey(ik, hash))
	} else if err == nil {
		found, err = p.HasDoc(ci.Meta.ID, hash, w.ID)
	}
	if err != nil {
		return err
	}
	if found {
		return wr.DupKeyError(ci.Indexes[0], w.New)
	}
	wr.markStaged(s, ci.Indexes[0], wr.idKey(ik, hash), w.ID)
	return nil
}

// uniqueKey is the key of unique index xi's entry k that must be unique: the _id index's per
// logical partition (idKey), the others' as it is.
func (wr *Writer) uniqueKey(xi *catalog.Index, k []byte, hash uint64) []byte {
	if xi.IsID {
		return wr.idKey(k, hash)
	}
	return k
}

// idKey is what makes an _id unique: the encoded _id followed by its hash where the _id index
// has entries (the prefix of its entries for that logical partition), the encoded _id alone
// where the hash derives from the _id or is always 0, or is a capped collection's record id.
// It may return wr's scratch buffer.
func (wr *Writer) idKey(id []byte, hash uint64) []byte {
	if !wr.ci.IDIndexed || wr.ci.Capped != nil {
		return id
	}
	wr.idbuf = binary.BigEndian.AppendUint64(append(wr.idbuf[:0], id...), hash)
	return wr.idbuf
}

// probe returns the Probe of shard s, opening it at the first call.
func (wr *Writer) probe(s int) (catalog.Probe, error) {
	if p := wr.probes[s]; p != nil {
		return p, nil
	}
	p, err := wr.p.shardList()[s].NewProbe() // a transaction's view sees its own writes
	if err != nil {
		return nil, err
	}
	if wr.probes == nil {
		wr.probes = map[int]catalog.Probe{}
	}
	wr.probes[s] = p
	return p, nil
}

// closeProbes closes the writer's probes.
func (wr *Writer) closeProbes() error {
	var errs []error
	for s, p := range wr.probes {
		errs = append(errs, p.Close())
		delete(wr.probes, s)
	}
	return errors.Join(errs...)
}
