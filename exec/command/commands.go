package command

import "github.com/cleavedb/cleave/auth"

// addDataCommands registers the commands that read and write collections.
func (e *Server) addDataCommands(add func(*Command)) {
	add(&Command{Name: "find", Run: e.find, Action: auth.ActionRead, Help: "query for documents", Counter: OpQuery, Props: Cursor | InTxn | SnapshotRead | StaleRetry | Explainable | APIV1})
	add(&Command{Name: "insert", Run: e.insert, Action: auth.ActionWrite, Help: "insert documents", Counter: OpInsert, Props: InTxn | TxnCreates | RetryableWrite | WriteConcern | APIV1})
	add(&Command{Name: "getMore", Run: e.getMore, Action: auth.ActionRead, Help: "retrieve more results from an existing cursor", Counter: OpGetMore, Props: InTxn | APIV1})
	add(&Command{Name: "killCursors", Run: e.killCursors, Action: auth.ActionRead, Help: "kill a list of cursors", Props: InTxn | APIV1})
	e.addQueryCommands(add)
	e.addWriteCommands(add)
	e.addAggregateCommands(add)
	if e.Storage.Cluster != nil {
		e.addInternalCommands(add)
		e.addMoveCommands(add)
	}
}

// addWriteCommands registers update, delete and findAndModify.
func (e *Server) addWriteCommands(add func(*Command)) {
	add(&Command{Name: "update", Run: e.update, Action: auth.ActionWrite, Help: "update documents", Counter: OpUpdate, Props: InTxn | TxnCreates | Explainable | RetryableWrite | WriteConcern | APIV1})
	add(&Command{Name: "delete", Run: e.delete, Action: auth.ActionWrite, Help: "delete documents", Counter: OpDelete, Props: InTxn | Explainable | RetryableWrite | WriteConcern | APIV1})
	add(&Command{Name: "findAndModify", Aliases: []string{"findandmodify"}, Run: e.findAndModify, Action: auth.ActionWrite, Help: "atomically update or remove one document and return it", Counter: OpCommand, Props: InTxn | TxnCreates | Explainable | RetryableWrite | WriteConcern | APIV1})
}
