//go:build race

package wire

// scribbleRequests: a finished request's bytes are overwritten (scribble.go).
const scribbleRequests = true
