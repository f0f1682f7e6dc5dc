package exec

// addDDLCommands registers the database and collection commands.
func (e *Executor) addDDLCommands(add func(*command, ...string)) {}
