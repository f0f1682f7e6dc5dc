// Package integration holds end-to-end tests: they build the real cleave binary once (with
// the race detector), start it on 127.0.0.1 with a temporary data directory, and drive it as
// users do, with the official Go driver, mongosh and the Node.js driver (both pinned in the
// repository's package-lock.json; `make test` installs them).
//
// Each test starts its own server or uses the shared one, and works in a database named
// after itself, so tests run in parallel. `go test -short` skips this package.
package integration
