//go:build race

package bsonx

// raceEnabled: the race detector makes sync.Pool drop items at random (so allocation counts
// mean nothing) and slows the property tests tenfold.
const raceEnabled = true
