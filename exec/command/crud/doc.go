// Package crud holds the commands that read and write documents: find (tailable cursors
// included), getMore, killCursors, count, distinct, aggregate (with the stages that write
// or report on the server: $out, $merge, $collStats, $indexStats), explain, insert, update,
// delete and findAndModify, views, and their cluster-mode routing: which node each
// document or statement goes to, and how the nodes' results merge (the requests themselves
// go through exec/route; the owners answer them in exec/command/node).
package crud

import "github.com/cleavedb/cleave/exec/command"

// Handlers runs the commands of this package over the server's services.
type Handlers struct{ *command.Server }

// Add registers the commands of this package.
func (h *Handlers) Add(add func(*command.Command)) { h.addDataCommands(add) }
