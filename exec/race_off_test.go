//go:build !race

package exec

// raceEnabled reports a -race build, whose sync.Pool drops items at random (allocation
// counts mean nothing there) and where command.Request.End poisons a finished Request.
const raceEnabled = false
