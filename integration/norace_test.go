//go:build !race

package integration

// raceEnabled builds the server with -race when the tests themselves run with -race.
const raceEnabled = false
