//go:build !race

package wire

// scribbleRequests: off outside race-enabled builds (scribble.go).
const scribbleRequests = false
