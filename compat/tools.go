//go:build tools

// This file only keeps in go.mod the modules that the driver's spec test runners import from
// their _test.go files, which `go mod tidy` would otherwise drop: compat runs those tests with
// `go test go.mongodb.org/mongo-driver/mongo/integration/...` in this module.
package compat

import (
	_ "github.com/davecgh/go-spew/spew"
	_ "github.com/google/go-cmp/cmp"
	_ "go.mongodb.org/mongo-driver/mongo/integration/mtest"
)
