package sharding

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// Spec is a parsed shardCollection request.
type Spec struct {
	DB, Coll         string
	Key              bsoncore.Document
	NumInitialChunks int
	Throughput       int64
	// Autoscale marks Throughput as an autoscale maximum (Cosmos DB's autoScaleSettings).
	Autoscale bool
	// Options are the create command's options for a collection created sharded (nil if
	// none); converting an existing collection keeps its own.
	Options bsoncore.Document
}

// StoreParts converts a shard package partition list to the catalog's.
func StoreParts(parts []shard.Partition) []store.Partition {
	out := make([]store.Partition, len(parts))
	for i, p := range parts {
		out[i] = store.Partition{ID: p.ID, Lo: p.Lo, Shard: p.Shard}
	}
	return out
}

// MapOf returns the partition map of catalog record c.
func MapOf(c *store.Collection) (*shard.Map, error) {
	parts := make([]shard.Partition, len(c.Partitions))
	for i, p := range c.Partitions {
		parts[i] = shard.Partition{ID: p.ID, Lo: p.Lo, Shard: p.Shard}
	}
	return shard.NewMap(parts)
}
