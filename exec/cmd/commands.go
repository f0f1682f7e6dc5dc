package cmd

import "github.com/cleavedb/cleave/auth"

// addDataCommands registers the commands that read and write collections.
func (e *Executor) addDataCommands(add func(*command, ...string)) {
	query := func(c *opCounters) { c.query.Add(1) }
	add(&command{run: e.find, action: auth.ActionRead, help: "query for documents", counter: query}, "find")
	add(&command{run: e.insert, action: auth.ActionWrite, help: "insert documents", counter: func(c *opCounters) { c.insert.Add(1) }}, "insert")
	add(&command{run: e.getMore, action: auth.ActionRead, help: "retrieve more results from an existing cursor", counter: func(c *opCounters) { c.getmore.Add(1) }}, "getMore")
	add(&command{run: e.killCursors, action: auth.ActionRead, help: "kill a list of cursors"}, "killCursors")
	e.addQueryCommands(add)
	e.addWriteCommands(add)
	e.addDDLCommands(add)
	e.addIndexCommands(add)
	e.addAggregateCommands(add)
	e.addShardCommands(add)
	e.addDrainCommands(add)
	if e.st.Cluster != nil {
		e.addInternalCommands(add)
		e.addMoveCommands(add)
	}
}

// addWriteCommands registers update, delete and findAndModify.
func (e *Executor) addWriteCommands(add func(*command, ...string)) {
	add(&command{run: e.update, action: auth.ActionWrite, help: "update documents", counter: func(c *opCounters) { c.update.Add(1) }}, "update")
	add(&command{run: e.delete, action: auth.ActionWrite, help: "delete documents", counter: func(c *opCounters) { c.delete.Add(1) }}, "delete")
	add(&command{run: e.findAndModify, action: auth.ActionWrite, help: "atomically update or remove one document and return it",
		counter: func(c *opCounters) { c.command.Add(1) }}, "findAndModify", "findandmodify")
}
