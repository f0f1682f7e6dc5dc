package exec

import (
	"sync"
	"sync/atomic"

	"github.com/cleavedb/cleave/store"
)

// Spilling. A blocking sort or $group that passes its memory bound fails with code 292
// unless the command opted in with allowDiskUse; then it writes what it holds to a spill, a
// sorted run in the temporary Pebble store, and merges it back (sort.go, agg_group_spill.go).
//
// The temporary store is process-wide, as mongod's <dbpath>/_tmp is: the server installs one
// under its data directory at startup (SetTempStore); without one (unit tests, embedders) each
// busy period uses a private directory under os.TempDir(). The memory bounds are the
// process-wide server parameters of cmd_params.go, settable with setParameter.

// tempStore is the installed temporary store; nil means fallbackTemp.
var tempStore atomic.Pointer[store.TempStore]

// fallbackTemp is the temporary store used when none is installed.
var fallbackTemp = sync.OnceValues(func() (*store.TempStore, error) {
	return store.NewTempStore(store.TempOptions{})
})

// SetTempStore installs t as the process's store for spills (nil: a private directory under
// os.TempDir()). The caller closes t after the executors that use it.
func SetTempStore(t *store.TempStore) { tempStore.Store(t) }

// newSpill starts a spill in the process's temporary store.
func newSpill() (*store.Spill, error) {
	t := tempStore.Load()
	if t == nil {
		var err error
		if t, err = fallbackTemp(); err != nil {
			return nil, err
		}
	}
	return t.NewSpill()
}
