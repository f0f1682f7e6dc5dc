package exec

// addWriteCommands registers update, delete and findAndModify.
func (e *Executor) addWriteCommands(add func(*command, ...string)) {}
