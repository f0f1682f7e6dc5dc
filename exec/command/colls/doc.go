// Package colls holds the commands that define collections and place them: create (views,
// capped and sharded creates included), drop, dropDatabase, renameCollection, collMod,
// listDatabases, listCollections, createIndexes, listIndexes, dropIndexes, the Atlas Search
// index commands (refused as Community does), collStats, dbStats, dataSize, compact,
// validate, convertToCapped and cloneCollectionAsCapped; and the sharding commands:
// shardCollection, moveChunk, partitionStats, removeShard, the balancer switch and Cosmos
// DB's customAction (CreateCollection, UpdateCollection, GetCollection and their database
// forms). Index builds, TTL and collMod's plans run in exec/ddl; splits and moves in
// exec/sharding.
package colls

import (
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/command/crud"
)

// Handlers runs the commands of this package over the server's services; views are the
// read path's (CRUD's), which parses their pipelines.
type Handlers struct {
	*command.Server
	CRUD *crud.Handlers
}

// Add registers the commands of this package.
func (h *Handlers) Add(add func(*command.Command)) {
	h.addDDLCommands(add)
	h.addIndexCommands(add)
	h.addSearchIndexCommands(add)
	h.addShardCommands(add)
	h.addBalancingCommands(add)
	h.addMoveRangeCommand(add)
	h.addZoneCommands(add)
	h.addSplitCommand(add)
	h.addRefineCommand(add)
	h.addReshardCommands(add)
	h.addDrainCommands(add)
}
