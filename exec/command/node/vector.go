package node

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/command/crud"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// shardVectorSearch answers, on this node, another node's _cleaveShardVectorSearch {spec}: the
// $vectorSearch spec run over this node's shards owning partitions of the collection,
// {docs: [best first, at most limit, each carrying its score], ru, shards: [{shard,
// examined, found}]}; the router merges the nodes' documents by score, and explain shows
// each shard's part.
func (h *Handlers) shardVectorSearch(ctx context.Context, r *command.Request) error {
	ci, err := h.ownedColl(ctx, r, -1)
	if err != nil {
		return err
	}
	spec, ok := r.Body.Lookup("spec").DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.BadValue, "_cleaveShardVectorSearch: spec must be a document")
	}
	docs, ru, parts, err := h.VectorSearchLocal(r.DB, ci, spec)
	if err != nil {
		return err
	}
	aidx, out := bsoncore.AppendArrayElementStart(r.Out, "docs")
	for i, d := range docs {
		out = bsoncore.AppendDocumentElement(out, strconv.Itoa(i), d)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	out = bsoncore.AppendDoubleElement(out, "ru", ru)
	r.Out = crud.AppendVectorParts(out, "shards", parts)
	return nil
}
