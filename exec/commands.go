package exec

// addDataCommands registers the commands that read and write collections.
func (e *Executor) addDataCommands(add func(*command, ...string)) {
	query := func(c *opCounters) { c.query.Add(1) }
	add(&command{run: e.find, help: "query for documents", counter: query}, "find")
	add(&command{run: e.insert, help: "insert documents", counter: func(c *opCounters) { c.insert.Add(1) }}, "insert")
	add(&command{run: e.getMore, help: "retrieve more results from an existing cursor", counter: func(c *opCounters) { c.getmore.Add(1) }}, "getMore")
	add(&command{run: e.killCursors, help: "kill a list of cursors"}, "killCursors")
	e.addQueryCommands(add)
	e.addWriteCommands(add)
	e.addDDLCommands(add)
	e.addIndexCommands(add)
	e.addAggregateCommands(add)
	e.addShardCommands(add)
}

// addWriteCommands registers update, delete and findAndModify.
func (e *Executor) addWriteCommands(add func(*command, ...string)) {
	add(&command{run: e.update, help: "update documents", counter: func(c *opCounters) { c.update.Add(1) }}, "update")
	add(&command{run: e.delete, help: "delete documents", counter: func(c *opCounters) { c.delete.Add(1) }}, "delete")
	add(&command{run: e.findAndModify, help: "atomically update or remove one document and return it",
		counter: func(c *opCounters) { c.command.Add(1) }}, "findAndModify", "findandmodify")
}
