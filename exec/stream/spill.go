package stream

import (
	"sync"

	"github.com/cleavedb/cleave/store"
)

// Spilling. A blocking sort or $group that passes its memory bound fails with code 292
// unless the command opted in with allowDiskUse; then it writes what it holds to a spill, a
// sorted run in a temporary Pebble store, and merges it back (sort.go, and $group's spill in
// exec/agg).
//
// The server gives each executor one temporary store under its data directory, as mongod's
// <dbpath>/_tmp (Temp made by NewTemp); a stage given no Temp (unit tests, embedders) spills
// to a private store under os.TempDir(), opened on first use and shared by the process.

// Temp hands out spills from one temporary store. A nil *Temp is the private default.
type Temp struct {
	st     *store.TempStore
	budget *Budget
}

// NewTemp returns a Temp over st, whose stages reserve their memory from budget (nil: no
// account); st nil is the private default, without a budget. The caller closes st after the
// stages that use it.
func NewTemp(st *store.TempStore, budget *Budget) *Temp {
	if st == nil {
		return nil
	}
	return &Temp{st: st, budget: budget}
}

// Budget returns the memory account of t's stages: what they hold before they spill to t.
func (t *Temp) Budget() *Budget {
	if t == nil {
		return nil
	}
	return t.budget
}

// fallbackTemp is the private temporary store of a nil Temp.
var fallbackTemp = sync.OnceValues(func() (*store.TempStore, error) {
	return store.NewTempStore(store.TempOptions{})
})

// NewSpill starts a spill in t's store.
func (t *Temp) NewSpill() (*store.Spill, error) {
	if t != nil {
		return t.st.NewSpill()
	}
	st, err := fallbackTemp()
	if err != nil {
		return nil, err
	}
	return st.NewSpill()
}
