package route

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
)

// RemoteVectorSearch ships a $vectorSearch (spec, the stage's argument) to every other node
// holding partitions of ci (_cleaveShardVectorSearch), in parallel, and hands use each
// node's reply: {docs: [the node's best limit documents, each carrying its score], ru}. The
// caller merges them by score with its own shards' hits, as mongos merges the shards' top-k.
// A node that cannot be reached fails the search, so no answer silently misses a shard.
func (r *Router) RemoteVectorSearch(ctx context.Context, ci *catalog.Coll, spec bsoncore.Document, use func(bsoncore.Document)) error {
	if r.nodes == nil || !r.SpansRemote(ci) {
		return nil
	}
	cmd := bsoncore.NewDocumentBuilder().
		AppendString("_cleaveShardVectorSearch", ci.Meta.Name).
		AppendInt64("collId", int64(ci.Meta.ID)).
		AppendInt64("rev", r.cat.Store().Revision()).
		AppendDocument("spec", spec).
		AppendString("$db", ci.Meta.DB).Build()
	return r.cat.Broadcast(ctx, r.nodes, ci, cmd, use)
}
