//go:build race

package exec

// poisonBuild: command.Request.End poisons a finished Request (race-enabled build).
const poisonBuild = true
