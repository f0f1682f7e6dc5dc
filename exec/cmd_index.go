package exec

// addIndexCommands registers createIndexes, listIndexes and dropIndexes.
func (e *Executor) addIndexCommands(add func(*command, ...string)) {}
