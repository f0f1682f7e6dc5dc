package exec

import (
	"testing"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// testExecutor returns an executor over n fresh shard stores in temporary directories (the
// catalog in shard 0), configured by opts, and closes them when the test ends.
func testExecutor(tb testing.TB, n int, opts Options) *Executor {
	tb.Helper()
	return testExecutorStore(tb, n, opts, store.Options{})
}

// testExecutorStore is testExecutor with the stores opened with so (its Dir set to a
// temporary directory each).
func testExecutorStore(tb testing.TB, n int, opts Options, so store.Options) *Executor {
	tb.Helper()
	var dbs []*store.DB
	st := &Storage{}
	for range n {
		so.Dir = tb.TempDir()
		db, err := store.Open(so)
		if err != nil {
			tb.Fatal(err)
		}
		dbs = append(dbs, db)
		st.Shards = append(st.Shards, catalog.Local(db))
	}
	cat, err := store.OpenCatalog(dbs[0])
	if err != nil {
		tb.Fatal(err)
	}
	st.Catalog = cat
	opts.Storage = st
	e := New(opts, zap.NewNop())
	tb.Cleanup(func() {
		e.Close()
		for _, db := range dbs {
			_ = db.Close()
		}
	})
	return e
}
