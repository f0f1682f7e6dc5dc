// Package node holds the internal commands another node of the cluster sends to the owner of
// a shard: a shard's part of a read (_cleaveShardFind, _cleaveShardGetMore, _cleaveShardKill;
// a point read by _id and hash as the compact _cleaveShardGet, a Direct command answered
// without planning: point.go),
// of an insert (_cleaveShardWrite), of an update, delete or findAndModify
// (_cleaveShardModify; a plain single-document update as the compact _cleaveShardUpdate,
// a Direct command: update.go), of an index build or drop (_cleaveShardIndexes), of statistics or
// validation (_cleaveShardStats), of a $vectorSearch (_cleaveShardVectorSearch), and the steps of a partition move between nodes. Each
// runs on this node's shards only, after catching up with the router's catalog revision,
// and answers StaleConfig when its own map of the shard differs.
package node

import (
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/command/crud"
)

// Handlers runs the internal commands over the server's services and the CRUD commands'
// statement compilers.
type Handlers struct{ *crud.Handlers }

// Add registers the internal commands (cluster mode only).
func (h *Handlers) Add(add func(*command.Command)) {
	h.addInternalCommands(add)
	h.addMoveCommands(add)
	h.addRaftCommand(add)
}
