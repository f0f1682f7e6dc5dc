package write

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Single-document writes on a sharded collection follow mongos' targeting rules (MongoDB
// 7.0, before updateOne without a shard key): a write that may change only one document
// must be routable to one document unambiguously, because _id is unique per shard only.
//   - update {multi: false}: the query targets a single shard, or fixes _id by equality; a
//     replacement may instead carry the full shard key; an upsert's query must fix the
//     full shard key (ShardKeyNotFound, or InvalidOptions for the op-style update);
//   - delete {limit: 1}: the query fixes the full shard key or _id (ShardKeyNotFound);
//   - findAndModify: the query fixes the full shard key (ShardKeyNotFound).
//
// A missing shard-key field counts as null (MongoDB 4.4+): {k: null} fixes the key (to the
// partition of null, where documents without k are stored), and a replacement without k
// places its document as null.
//
// A shard here is one of cleave's --shards stores, as config.shards lists them: with one
// store, every update targets a single shard.

// exactShardKey reports whether f fixes every field of the shard key to one value, null
// included (MongoDB's extractShardKeyFromQuery).
func exactShardKey(ci *catalog.Coll, f *match.Filter) bool {
	for _, k := range ci.ShardKey {
		vals, ok := f.KeyEqualities(k.Path)
		if !ok || len(vals) != 1 {
			return false
		}
	}
	return true
}

// exactID reports whether the op's query fixes _id to one value.
func (op *Op) exactID() bool {
	vals, ok := op.Filter.Equalities("_id")
	return ok && len(vals) == 1 && vals[0].Type != bsoncore.TypeArray
}

// targetedShards is how many shards the op's query reads.
func (op *Op) targetedShards() int {
	seen := map[int]bool{}
	for _, t := range query.TargetPartitions(op.CI, op.Filter) {
		seen[op.CI.Map.Partition(t).Shard] = true
	}
	return len(seen)
}

// CheckUpdateTarget applies the rule to an update statement whose update document is u.
func (op *Op) CheckUpdateTarget(u bsoncore.Value) error {
	if op.CI == nil || op.CI.ShardKey == nil || op.Multi {
		return nil
	}
	if op.Upsert {
		if !exactShardKey(op.CI, op.Filter) {
			return mongoerr.New(mongoerr.ShardKeyNotFound, "Failed to target upsert by query :: could not extract exact shard key")
		}
		return nil
	}
	n := op.targetedShards()
	if n == 1 {
		return nil
	}
	if op.Upd.IsReplacement() {
		if !replacementHasShardKey(op.CI, u.Document()) {
			return mongoerr.New(mongoerr.ShardKeyNotFound, "Failed to target update by replacement document :: could not extract exact shard key")
		}
		return nil
	}
	if op.exactID() {
		return nil
	}
	return mongoerr.New(mongoerr.InvalidOptions, "A {multi:false} update on a sharded collection must contain an exact match on _id "+
		"(and have the collection default collation) or target a single shard (and have the simple collation), but this update "+
		"targeted %d shards. Update request: { q: %s, u: %s, multi: false, upsert: false }, shard key pattern: %s",
		n, shellDoc(op.Query), bsonx.ShellString(u), op.CI.ShardKeyPattern())
}

// CheckDeleteTarget applies the rule to a delete statement.
func (op *Op) CheckDeleteTarget() error {
	if op.CI == nil || op.CI.ShardKey == nil || op.Multi || exactShardKey(op.CI, op.Filter) || op.exactID() {
		return nil
	}
	return mongoerr.New(mongoerr.ShardKeyNotFound, "A single delete on a sharded collection must contain an exact match on _id "+
		"(and have the collection default collation) or contain the shard key (and have the simple collation). "+
		"Delete request: { q: %s, limit: 1 }, shard key pattern: %s", shellDoc(op.Query), op.CI.ShardKeyPattern())
}

// CheckFAMTarget applies the rule to a findAndModify.
func (op *Op) CheckFAMTarget() error {
	if op.CI == nil || op.CI.ShardKey == nil || exactShardKey(op.CI, op.Filter) {
		return nil
	}
	return mongoerr.New(mongoerr.ShardKeyNotFound, "Query for sharded findAndModify must contain the shard key")
}

// replacementHasShardKey reports whether replacement document doc can be placed by its
// shard key: no field of it is an array (a missing one is null, as mongos targets it).
func replacementHasShardKey(ci *catalog.Coll, doc bsoncore.Document) bool {
	for _, k := range ci.ShardKey {
		if catalog.KeyValue(doc, k.Path).Type == bsoncore.TypeArray {
			return false
		}
	}
	return true
}

// shellDoc formats a document as mongos' messages do.
func shellDoc(d bsoncore.Document) string {
	return bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
}
