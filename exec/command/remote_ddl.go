package command

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
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

// ddlRemote is the executor's ddl.Remote.
type ddlRemote struct{ e *Server }

// FillIndexes implements ddl.Remote.
func (d ddlRemote) FillIndexes(ctx context.Context, c *store.Collection, ids []store.IndexID) error {
	return d.e.onOwnerNodes(ctx, c, "build", ids)
}

// DeleteIndexData implements ddl.Remote.
func (d ddlRemote) DeleteIndexData(ctx context.Context, c *store.Collection, ids []store.IndexID) error {
	return d.e.onOwnerNodes(ctx, c, "delete", ids)
}

// ownerNodes returns, for each other node holding partitions of ci, one of its shards
// (where its requests go), in shard order.
func (e *Server) ownerNodes(ci *catalog.Coll) []int {
	all := e.Cat.Shards()
	var nodes []string
	var shards []int
	for i := range ci.Map.Len() {
		s := ci.Map.Partition(i).Shard
		if node, remote := catalog.RemoteNode(all[s]); remote && !slices.Contains(nodes, node) {
			nodes = append(nodes, node)
			shards = append(shards, s)
		}
	}
	return shards
}

// onOwnerNodes runs _cleaveShardIndexes op for indexes ids of c on every other node holding
// partitions of c, in parallel, and returns the first failure in shard order.
func (e *Server) onOwnerNodes(ctx context.Context, c *store.Collection, op string, ids []store.IndexID) error {
	ci, err := e.Cat.Info(c)
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
		AppendInt64("rev", e.Storage.Catalog.Revision()).
		AppendString("op", op).
		AppendArray("ids", arr.Build()).
		AppendString("$db", c.DB).Build()
	return e.broadcast(ctx, ci, cmd, nil)
}

// shardIndexes runs, on this node's shards, the part of an index build or drop another node
// asked for (see above): {op: "build" | "delete", ids}.
func (e *Server) shardIndexes(ctx context.Context, r *Request) error {
	ci, err := e.ownedColl(ctx, r, -1)
	if err != nil {
		return err
	}
	arr, _ := r.Body.Lookup("ids").ArrayOK()
	vals, _ := arr.Values()
	ids := make([]store.IndexID, 0, len(vals))
	for _, v := range vals {
		ids = append(ids, store.IndexID(v.AsInt64()))
	}
	// No move between this node and another runs meanwhile (sharding's move fence): the
	// fill never meets a copy this node holds without owning it yet. Not the DDL lock, which
	// the node that runs the build holds, and another node's build may hold here.
	release, err := e.Shards.FenceMoves(ctx)
	if err != nil {
		return err
	}
	defer release()
	ci = e.Cat.Refresh(ci)
	switch op, _ := r.Body.Lookup("op").StringValueOK(); op {
	case "build":
		for _, id := range ids {
			if !slices.ContainsFunc(ci.Meta.Indexes, func(x store.Index) bool { return x.ID == id && !x.Ready }) {
				return mongoerr.New(mongoerr.StaleConfig, "index %d of %s is not being built", id, ci.NS())
			}
		}
		e.Cat.Barrier() // this node's writers that did not see the new indexes finish first
		return e.DDL.FillLocal(ctx, ci.Meta, ids)
	case "delete":
		e.DDL.DeleteLocalIndexData(ci.Meta, ids)
		return nil
	default:
		return mongoerr.New(mongoerr.BadValue, "_cleaveShardIndexes: unknown op %q", op)
	}
}
