package route

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// Index builds and drops in cluster mode (ddl.Remote): the node that runs createIndexes
// adds the indexes to the shared catalog not ready, fills its own shards, then asks every
// other node holding partitions of the collection to fill its shards
// (_cleaveShardIndexes {op: "build"}): the owner catches up with the router's catalog
// revision (so that its writers maintain the new indexes), waits for the writers that
// started before (its barrier), and indexes the documents of its shards, checking unique
// keys there. Only when every node answered does the router mark the indexes ready, so a
// query never uses an index some node has not filled; the first failure (E11000 on any
// node) aborts the build everywhere: the indexes leave the catalog and every node deletes
// its entries ({op: "delete"}, as dropIndexes does).

// FillIndexes implements ddl.Remote.
func (rs *Nodes) FillIndexes(ctx context.Context, c *store.Collection, ids []store.IndexID) error {
	return rs.onOwnerNodes(ctx, c, "build", ids)
}

// DeleteIndexData implements ddl.Remote.
func (rs *Nodes) DeleteIndexData(ctx context.Context, c *store.Collection, ids []store.IndexID) error {
	return rs.onOwnerNodes(ctx, c, "delete", ids)
}

// ownerNodes returns, for each other node holding partitions of ci, one of its shards
// (where its requests go), in shard order.
func (rs *Nodes) ownerNodes(ci *catalog.Coll) []int {
	all := rs.cat.Shards()
	var nodes []string
	var shards []int
	for i := range ci.Map.Len() {
		s := ci.Map.Partition(i).Shard
		if node, remote := all[s].Node(); remote && !slices.Contains(nodes, node) {
			nodes = append(nodes, node)
			shards = append(shards, s)
		}
	}
	return shards
}

// onOwnerNodes runs _cleaveShardIndexes op for indexes ids of c on every other node holding
// partitions of c, in parallel, and returns the first failure in shard order.
func (rs *Nodes) onOwnerNodes(ctx context.Context, c *store.Collection, op string, ids []store.IndexID) error {
	ci, err := rs.cat.Info(c)
	if err != nil {
		return err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, id := range ids {
		arr.AppendInt64(int64(id))
	}
	cmd := bsoncore.NewDocumentBuilder().
		AppendString("_cleaveShardIndexes", c.Name).
		AppendInt64("collId", int64(c.ID)).
		AppendInt64("rev", rs.records.Revision()).
		AppendString("op", op).
		AppendArray("ids", arr.Build()).
		AppendString("$db", c.DB).Build()
	return rs.broadcast(ctx, ci, cmd, nil)
}
