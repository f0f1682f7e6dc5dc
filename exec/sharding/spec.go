package sharding

import (
	"sort"

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
	// PresplitHashedZones asks for the first partitions along the zone ranges defined before
	// the collection was sharded, one per shard of each range's zone (shardCollection's
	// presplitHashedZones).
	PresplitHashedZones bool
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

// StorePartsFrom is StoreParts for a map changed from prev by splits and moves: a partition
// that survives keeps its budget, and the children of a split share their parent's evenly,
// so that the budgets still sum to what they did.
func StorePartsFrom(prev []store.Partition, parts []shard.Partition) []store.Partition {
	out := StoreParts(parts)
	if len(prev) == 0 {
		return out
	}
	budget := make(map[uint64]float64, len(prev))
	for _, p := range prev {
		budget[p.ID] = p.BudgetRU
	}
	parent := make([]int, len(out)) // index in prev of the partition each child came from
	children := make(map[int]int)
	for i := range out {
		if b, ok := budget[out[i].ID]; ok {
			out[i].BudgetRU = b
			parent[i] = -1
			continue
		}
		j := max(sort.Search(len(prev), func(j int) bool { return prev[j].Lo > out[i].Lo })-1, 0)
		parent[i] = j
		children[j]++
	}
	for i := range out {
		if j := parent[i]; j >= 0 && prev[j].BudgetRU > 0 {
			out[i].BudgetRU = prev[j].BudgetRU / float64(children[j])
		}
	}
	return out
}
