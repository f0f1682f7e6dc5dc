package ddl

import (
	"crypto/rand"
	"fmt"

	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// buildFailed gives err, the failure of a build of c's indexes over its existing documents,
// the context MongoDB's createIndexes adds (create_indexes_cmd.cpp): "Index build failed:
// <build uuid>: Collection <ns> ( <collection uuid> ) :: caused by :: <reason>", with the
// reason's code and extra fields (keyPattern, keyValue) unchanged. A collection dropped
// meanwhile (NamespaceNotFound), a disk under its reserve (OutOfDiskSpace: MongoDB checks
// it before the build starts, and answers it bare) and errors that are not MongoDB's pass
// through as they are.
func buildFailed(c *store.Collection, err error) error {
	me := mongoerr.As(err)
	if me == nil || me.Code == mongoerr.NamespaceNotFound || me.Code == mongoerr.OutOfDiskSpace {
		return err
	}
	var build [16]byte
	_, _ = rand.Read(build[:]) // crypto/rand.Read never fails (Go 1.24+)
	build[6] = build[6]&0x0f | 0x40
	build[8] = build[8]&0x3f | 0x80
	out := mongoerr.Wrap(err, me.Code, "Index build failed: %s: Collection %s.%s ( %s ) :: caused by :: %s",
		uuidString(build), c.DB, c.Name, uuidString(c.UUID), me.Message)
	out.Labels, out.Info = me.Labels, me.Info
	return out
}

// uuidString formats a UUID as MongoDB prints one (8-4-4-4-12 lowercase hex digits).
func uuidString(id [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
}

// DuplicateBuildError is MongoDB's answer to a createIndexes that asks for the same index
// twice on collection c holding documents (MultiIndexBlock::init): the build fails with
// OperationFailed, in buildFailed's frame.
func DuplicateBuildError(c *store.Collection) error {
	return buildFailed(c, mongoerr.New(mongoerr.OperationFailed, "Cannot build two identical indexes. Try again without duplicate indexes."))
}
