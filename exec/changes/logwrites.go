//go:build !nochangelog

package changes

// logWrites reports whether document writes leave change records. Only a build with the
// nochangelog tag turns it off, to measure the change log's cost against a server without it
// (docs/benchmarks.md); such a build is not a server to run: its change streams miss every
// document write.
const logWrites = true
