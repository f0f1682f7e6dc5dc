package catalog

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cleavedb/cleave/store"
)

// IndexUsage counts, per index, the operations whose plan used it ($indexStats'
// accesses.ops) since the server started or the index was first used. It outlives the
// compiled Coll, which is rebuilt at every catalog change.
type IndexUsage struct {
	m sync.Map // indexUseKey → *indexUse
}

type indexUseKey struct {
	coll store.CollID
	idx  store.IndexID
}

// IndexUse is one index's counter: the operations whose plan used it, since when.
type IndexUse struct {
	Ops   atomic.Int64
	Since time.Time
}

// Get returns the counter of an index, creating it.
func (u *IndexUsage) Get(coll store.CollID, idx store.IndexID) *IndexUse {
	k := indexUseKey{coll, idx}
	if v, ok := u.m.Load(k); ok {
		return v.(*IndexUse)
	}
	v, _ := u.m.LoadOrStore(k, &IndexUse{Since: time.Now()})
	return v.(*IndexUse)
}
