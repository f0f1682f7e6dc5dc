package colls

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// maxRangedFields bounds the fields of a ranged shard key ({a: 1, b: 1, c: 1}); only the
// first bytes of its values' encoding place a document (bsonx.RangeKey), so more fields
// would only be carried.
const maxRangedFields = 3

// isRanged reports whether key pattern key is a ranged key: no hashed field.
func isRanged(key bsoncore.Document) bool {
	elems, _ := key.Elements()
	for _, el := range elems {
		if s, ok := el.Value().StringValueOK(); ok && s == "hashed" {
			return false
		}
	}
	return len(elems) > 0
}

// checkKeyOptions refuses the shardCollection options the key cannot take: unique on a
// hashed key (MongoDB's refusal), and on a ranged key numInitialChunks (a ranged key starts
// with one chunk, as in MongoDB) and unique, which cleave does not enforce on a shard key.
func checkKeyOptions(spec sharding.Spec, unique bool) error {
	if !isRanged(spec.Key) {
		if unique {
			return mongoerr.New(mongoerr.InvalidOptions, "hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.")
		}
		return nil
	}
	if spec.NumInitialChunks > 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "numInitialChunks is only supported when the collection is empty and has a hashed field in the shard key pattern")
	}
	if unique {
		return mongoerr.New(mongoerr.NotImplemented, "unique ranged shard keys are not supported by cleave: declare a unique index on the key's fields instead")
	}
	return nil
}

// initialCount returns the number of partitions a collection sharded by spec starts with:
// one for a ranged key, as MongoDB starts it with one chunk (its values are not known
// yet, so there is nothing to cut at), else what its throughput and numInitialChunks ask.
func initialCount(h *Handlers, spec sharding.Spec, shards int) int {
	if isRanged(spec.Key) {
		return 1
	}
	return shard.InitialCount(float64(spec.Throughput), h.Shards.Policy().PartitionMaxRU, spec.NumInitialChunks, shards)
}

// layoutShards returns the shards a new collection's initial partitions are spread over:
// one for a ranged key (its one partition; the balancer spreads the partitions its
// splits make), else all of them (shard.InitialLayout gives each shard one at least).
func layoutShards(spec sharding.Spec, shards int) int {
	if isRanged(spec.Key) {
		return 1
	}
	return shards
}
