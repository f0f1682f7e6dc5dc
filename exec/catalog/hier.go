package catalog

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/shard"
)

// A hierarchical shard key ({tenantId: "hashed", userId: "hashed"[, sessionId: "hashed"]}) is
// Cosmos DB's subpartitioning: a document's hash is composed of its levels' hashes, level 1
// in the top 32 bits (shard.ComposeHash), so the documents of one level-1 value are one
// contiguous hash range that splits and moves like any other. The logical partition (the
// _id uniqueness scope and the size cap) is the full key, the hash of all levels.

// compileLevels sets Hashed to the shard key's (first) hashed field and Levels to its
// hashed fields when there are more than one.
func (ci *Coll) compileLevels() {
	for i, f := range ci.ShardKey {
		if f.Hashed {
			ci.Levels = append(ci.Levels, i)
		}
	}
	if len(ci.Levels) > 0 {
		ci.Hashed = ci.Levels[0]
	}
	if len(ci.Levels) < 2 {
		ci.Levels = nil
	}
}

// LevelPath returns the field path of level i (0-based) of a hierarchical key.
func (ci *Coll) LevelPath(i int) string { return ci.ShardKey[ci.Levels[i]].Path }

// hierHash returns the composed hash of doc's hierarchical key, refusing an array at any
// level as a single-field key's array is refused.
func (ci *Coll) hierHash(doc bsoncore.Document) (uint64, error) {
	var hb [shard.MaxLevels]uint64
	hs := hb[:0]
	for i := range ci.Levels {
		v := KeyValue(doc, ci.LevelPath(i))
		if v.Type == bsoncore.TypeArray {
			return 0, errShardKeyArray()
		}
		hs = append(hs, bsonx.Hash(v))
	}
	return shard.ComposeHash(hs), nil
}

// maxHierLabel bounds the document a hierarchical key's label holds: past it, the lower
// levels are left out (the prefix is what names a hot tenant).
const maxHierLabel = 160

// HierLabel appends the label of a hierarchical key whose first len(vals) levels are vals:
// an embedded document {level1: v1, ...} (HotKeyLabel renders it as the shell prints it).
// Levels that would take it past maxHierLabel bytes are left out; a level-1 value alone
// too large is labelled as a single value is (ValueLabel, truncated).
func (ci *Coll) HierLabel(dst []byte, vals []bsoncore.Value) []byte {
	for n := len(vals); n > 0; n-- {
		size := 5
		for i := range n {
			size += 2 + len(ci.LevelPath(i)) + len(vals[i].Data)
		}
		if size > maxHierLabel {
			continue
		}
		dst = append(dst, byte(bsoncore.TypeEmbeddedDocument))
		idx, d := bsoncore.AppendDocumentStart(dst)
		for i := range n {
			d = bsoncore.AppendValueElement(d, ci.LevelPath(i), vals[i])
		}
		dst, _ = bsoncore.AppendDocumentEnd(d, idx)
		return dst
	}
	if len(vals) == 0 {
		return dst
	}
	return ValueLabel(dst, vals[0])
}

// hierDocLabel appends the label of doc's hierarchical key (HierLabel).
func (ci *Coll) hierDocLabel(dst []byte, doc bsoncore.Document) []byte {
	var vb [shard.MaxLevels]bsoncore.Value
	vals := vb[:0]
	for i := range ci.Levels {
		vals = append(vals, KeyValue(doc, ci.LevelPath(i)))
	}
	return ci.HierLabel(dst, vals)
}

// PrefixLabel returns the label of the level-1 value of a hierarchical key's label (made by
// HierLabel), or "" when label is not one.
func PrefixLabel(label string) string {
	if len(label) < 6 || bsoncore.Type(label[0]) != bsoncore.TypeEmbeddedDocument {
		return ""
	}
	el, err := bsoncore.Document(label[1:]).IndexErr(0)
	if err != nil {
		return ""
	}
	idx, d := bsoncore.AppendDocumentStart([]byte{byte(bsoncore.TypeEmbeddedDocument)})
	d = bsoncore.AppendValueElement(d, el.Key(), el.Value())
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return string(d)
}
