// Package crud holds the commands that read and write documents: find (tailable cursors
// included), getMore, killCursors, count, distinct, aggregate (with the stages that write
// or report on the server: $out, $merge, $collStats, $indexStats), explain, insert, update,
// delete and findAndModify, views, and their cluster-mode routing: the router's side of
// inserts, updates and deletes spanning nodes, and the owner's side of the internal
// commands another node sends (_cleaveShard*, the moves between nodes).
package crud

import "github.com/cleavedb/cleave/exec/command"

// Handlers runs the commands of this package over the server's services.
type Handlers struct{ *command.Server }

// Add registers the commands of this package.
func (h *Handlers) Add(add func(*command.Command)) { h.addDataCommands(add) }
