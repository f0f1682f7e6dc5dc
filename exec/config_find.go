package exec

import (
	"github.com/cleavedb/cleave/exec/sharding"

	"context"
)

// findConfig runs before a find on the config database: it refreshes the collection the
// find reads when it is one of the derived ones, then lets the find read it (handled false).
//
//nolint:unparam // find's hook may answer by itself; the derived collections never need to
func (e *Executor) findConfig(_ context.Context, _ *request, a *findArgs) (handled bool, err error) {
	for _, n := range sharding.ConfigColls {
		if n == a.coll {
			return false, e.shards.SyncConfig(n)
		}
	}
	return false, nil
}
