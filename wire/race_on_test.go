//go:build race

package wire

// raceEnabled reports a -race build, whose shadow memory makes memory figures meaningless.
const raceEnabled = true
