package ddl

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/store"
)

// Index builds and drops in cluster mode: the node that runs createIndexes adds the indexes
// to the shared catalog not ready, fills its own shards, then asks every other node holding
// partitions of the collection to fill its shards (_cleaveShardIndexes {op: "build"},
// answered by exec/command/node): the owner catches up with the router's catalog revision
// (so that its writers maintain the new indexes), waits for the writers that started before
// (its barrier), and indexes the documents of its shards, checking unique keys there. Only
// when every node answered does the router mark the indexes ready, so a query never uses an
// index some node has not filled; the first failure (E11000 on any node) aborts the build
// everywhere: the indexes leave the catalog and every node deletes its entries
// ({op: "delete"}, as dropIndexes does).

// onOtherNodes runs _cleaveShardIndexes op ("build" or "delete") for indexes ids of c on every
// other node holding partitions of c, in parallel, and returns the first failure in shard
// order.
func (x *Runner) onOtherNodes(ctx context.Context, c *store.Collection, op string, ids []store.IndexID) error {
	ci, err := x.cat.Info(c)
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
		AppendInt64("rev", x.cat.Store().Revision()).
		AppendString("op", op).
		AppendArray("ids", arr.Build()).
		AppendString("$db", c.DB).Build()
	return x.cat.Broadcast(ctx, x.peers, ci, cmd, nil)
}
