package crud

import (
	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/command"
)

// addDataCommands registers the commands that read and write collections.
func (h *Handlers) addDataCommands(add func(*command.Command)) {
	add(&command.Command{Name: "find", Run: h.find, Action: auth.ActionRead, Help: "query for documents", Counter: command.OpQuery, Props: command.ReadConcern | command.OpensCursor | command.InTxn | command.SnapshotRead | command.StaleRetry | command.Explainable | command.APIV1})
	add(&command.Command{Name: "insert", Run: h.insert, Action: auth.ActionWrite, Help: "insert documents", Counter: command.OpInsert, Props: command.InTxn | command.TxnCreates | command.RetryableWrite | command.WriteConcern | command.APIV1})
	add(&command.Command{Name: "getMore", Run: h.getMore, Action: auth.ActionRead, Help: "retrieve more results from an existing cursor", Counter: command.OpGetMore, Props: command.InTxn | command.APIV1})
	add(&command.Command{Name: "killCursors", Run: h.killCursors, Action: auth.ActionRead, Help: "kill a list of cursors", Props: command.InTxn | command.APIV1})
	h.addQueryCommands(add)
	h.addWriteCommands(add)
	h.addAggregateCommands(add)
	h.addMapReduceCommand(add)
}

// addWriteCommands registers update, delete and findAndModify.
func (h *Handlers) addWriteCommands(add func(*command.Command)) {
	add(&command.Command{Name: "update", Run: h.update, Action: auth.ActionWrite, Help: "update documents", Counter: command.OpUpdate, Props: command.InTxn | command.TxnCreates | command.Explainable | command.RetryableWrite | command.WriteConcern | command.APIV1})
	add(&command.Command{Name: "delete", Run: h.delete, Action: auth.ActionWrite, Help: "delete documents", Counter: command.OpDelete, Props: command.InTxn | command.Explainable | command.RetryableWrite | command.WriteConcern | command.APIV1})
	add(&command.Command{Name: "findAndModify", Aliases: []string{"findandmodify"}, Run: h.findAndModify, Action: auth.ActionWrite, Help: "atomically update or remove one document and return it", Counter: command.OpCommand, Props: command.InTxn | command.TxnCreates | command.Explainable | command.RetryableWrite | command.WriteConcern | command.APIV1})
}
