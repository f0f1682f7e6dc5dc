package exec

// addWriteCommands registers update, delete and findAndModify.
func (e *Executor) addWriteCommands(add func(*command, ...string)) {
	add(&command{run: e.update, help: "update documents", counter: func(c *opCounters) { c.update.Add(1) }}, "update")
	add(&command{run: e.delete, help: "delete documents", counter: func(c *opCounters) { c.delete.Add(1) }}, "delete")
	add(&command{run: e.findAndModify, help: "atomically update or remove one document and return it",
		counter: func(c *opCounters) { c.command.Add(1) }}, "findAndModify", "findandmodify")
}
