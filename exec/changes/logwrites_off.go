//go:build nochangelog

package changes

// logWrites is off in the nochangelog build (logwrites.go).
const logWrites = false
