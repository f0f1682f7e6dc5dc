package catalog

import (
	"github.com/zeebo/xxh3"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/collation"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// DocID returns the _id of a stored document (always its first field) and its encoded key.
func DocID(doc bsoncore.Document, dst []byte) (bsoncore.Value, []byte) {
	v, _ := FirstValue(doc, "_id")
	return v, bsonx.AppendKey(dst, v)
}

// FirstValue returns the first element's value when its key is name, else a lookup.
func FirstValue(doc bsoncore.Document, name string) (bsoncore.Value, bool) {
	if el, ok := bsonx.FirstElement(doc); ok && el.Key() == name {
		return el.Value(), true
	}
	v, err := doc.LookupErr(name)
	return v, err == nil
}

// ShardHash returns the hash that places doc in ci's partitions: 0 for an unsharded
// collection, the composed hash of a hierarchical key's levels (hier.go), the range key of a
// ranged key's values (ranged.go), else the hash of
// the shard key's hashed field (null when missing or undefined, see KeyValue); an array at
// a field of the shard key or on its path is refused with ShardKeyNotFound, as mongos
// refuses it. A time-series measurement has the hash of its
// content, the first slot where it may be stored (exec/write/timeseries.go).
func (ci *Coll) ShardHash(doc bsoncore.Document) (uint64, error) {
	if ci.TS != nil {
		return MeasurementHash(doc), nil
	}
	if ci.Hashed < 0 {
		return 0, nil
	}
	if ci.Levels != nil {
		return ci.hierHash(doc)
	}
	if ci.Ranged {
		return ci.rangedHash(doc)
	}
	v := KeyValue(doc, ci.ShardKey[ci.Hashed].Path)
	if v.Type == bsoncore.TypeArray {
		return 0, errShardKeyArray()
	}
	// The other fields of a compound key do not place the document, but mongos extracts
	// the whole key and refuses an array in any of its fields.
	for i, f := range ci.ShardKey {
		if i != ci.Hashed && KeyValue(doc, f.Path).Type == bsoncore.TypeArray {
			return 0, errShardKeyArray()
		}
	}
	return bsonx.Hash(v), nil
}

// errShardKeyArray is mongos' refusal of a document whose shard key holds an array or has
// one on its path.
func errShardKeyArray() error {
	return mongoerr.New(mongoerr.ShardKeyNotFound, "Shard key cannot contain array values or array descendants.")
}

// IDHash returns the hash of the document with _id id when it can be known from the _id
// alone: ok is false when the collection is sharded on another field, time-series or
// capped (a capped document is at its record id, catalog.Capped).
func (ci *Coll) IDHash(id bsoncore.Value) (uint64, bool) {
	if ci.TS != nil || ci.Capped != nil {
		return 0, false
	}
	if ci.Hashed < 0 {
		return 0, true
	}
	if ci.IDIndexed {
		return 0, false
	}
	if ci.Ranged {
		return bsonx.RangeKey(id), true
	}
	return bsonx.Hash(id), true
}

// MeasurementHash is the first slot of a time-series measurement.
func MeasurementHash(doc bsoncore.Document) uint64 {
	return xxh3.Hash(doc)>>1 | 1<<63
}

// CheckCollation validates a collation document (nil: none given) with MongoDB's errors.
func CheckCollation(c bsoncore.Document) error {
	_, err := collation.Parse(c)
	return err
}

// ShardKeyLabel appends a compact label of doc's shard-key value: its BSON type byte and
// value bytes (at most 64), which hotKeyLabel turns back into text for reports.
func (ci *Coll) ShardKeyLabel(dst []byte, doc bsoncore.Document) []byte {
	if ci.Hashed < 0 || doc == nil {
		return dst
	}
	if ci.Levels != nil {
		return ci.hierDocLabel(dst, doc)
	}
	return ValueLabel(dst, KeyValue(doc, ci.ShardKey[ci.Hashed].Path))
}

// KeyValue returns doc's shard-key value at path as placement sees it: null when the field
// is missing (MongoDB's extractShardKeyFromDoc) or undefined, so that the one partition of
// null holds every document an equality to null matches ({k: null} matches all three). An
// array on the path is returned as the value ({a: [{b: 1}]} at "a.b" gives the array), as
// MongoDB's extraction returns it, so that callers refuse array descendants as they refuse
// array values.
func KeyValue(doc bsoncore.Document, path string) bsoncore.Value {
	v, ok := bsonx.LookupOrArray(doc, path)
	if !ok || v.Type == bsoncore.TypeUndefined {
		return bsoncore.Value{Type: bsoncore.TypeNull}
	}
	return v
}

// ValueLabel appends the label of shard-key value v to dst: its type and its first 64 bytes,
// enough to show a hot key without copying a large value into the key sample.
func ValueLabel(dst []byte, v bsoncore.Value) []byte {
	dst = append(dst, byte(v.Type))
	d := v.Data
	if len(d) > 64 {
		d = d[:64]
	}
	return append(dst, d...)
}

// ShardKeyPattern is the collection's key pattern as mongos prints it.
func (ci *Coll) ShardKeyPattern() string {
	return bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: ci.Meta.ShardKey})
}
