package ddl

import (
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/store"
)

// In cluster mode every node shares one catalog, so an unfinished index build in it is not
// necessarily this node's: each build records its node (store.Index.Builder). A node's start
// aborts only its own unfinished builds (its crash interrupted them); a build whose node is
// gone (its lease expired) is aborted by the partition manager (AbortOrphaned).

// Nodes is what the runner knows of the cluster (sharding.Cluster provides it).
type Nodes interface {
	// NodeName returns this node's name.
	NodeName() string
	// NodeUp reports whether node name is registered in the cluster now.
	NodeUp(name string) bool
	// Leader reports whether this node is the elected partition manager now.
	Leader() bool
}

// nodeName returns this node's name ("" on a single node).
func (x *Runner) nodeName() string {
	if x.nodes == nil {
		return ""
	}
	return x.nodes.NodeName()
}

// orphanInterval is how often the partition manager looks for builds of gone nodes.
const orphanInterval = 5 * time.Second

// AbortUnfinished removes the indexes whose build this node's crash interrupted (in the
// catalog, not ready, built by this node or recorded before builds named their node) and
// their partial entries, so that they are neither maintained forever nor in the way of a new
// build of the same index. Run it at startup, before any command.
func (x *Runner) AbortUnfinished() {
	self := x.nodeName()
	x.abortWhere("removing index builds interrupted by a crash", func(xi store.Index) bool {
		return xi.Builder == "" || xi.Builder == self
	})
}

// AbortOrphaned removes the unfinished builds whose node is gone, when this node is the
// partition manager; it reports whether it is. A node is gone when it was not registered in
// the cluster at this sweep nor at the previous one: a live node whose lease expired (a long
// pause, a loaded machine) registers again at once, and its build goes on and must not be
// taken from it; a dead node's builds go one sweep later.
func (x *Runner) AbortOrphaned() bool {
	if x.nodes == nil || !x.nodes.Leader() {
		return false
	}
	x.orphans.Lock()
	defer x.orphans.Unlock()
	self := x.nodeName()
	down := map[string]bool{}
	x.abortWhere("removing index builds of a node that left the cluster", func(xi store.Index) bool {
		if xi.Builder == "" || xi.Builder == self || x.nodes.NodeUp(xi.Builder) {
			return false
		}
		down[xi.Builder] = true
		return x.orphans.down[xi.Builder]
	})
	x.orphans.down = down
	return true
}

// StartOrphanSweep runs AbortOrphaned every orphanInterval until Close (cluster mode).
func (x *Runner) StartOrphanSweep() {
	if x.nodes == nil {
		return
	}
	x.bg.Add(1)
	go func() {
		defer x.bg.Done()
		t := time.NewTicker(orphanInterval)
		defer t.Stop()
		for {
			select {
			case <-x.stop:
				return
			case <-t.C:
				x.AbortOrphaned()
			}
		}
	}()
}

// abortWhere aborts the unfinished indexes for which mine holds, collection by collection.
func (x *Runner) abortWhere(why string, mine func(store.Index) bool) {
	state := x.cat.Store().State()
	for _, db := range state.Databases() {
		for _, c := range state.Collections(db.Name) {
			var ids []store.IndexID
			for _, xi := range c.Indexes {
				if !xi.Ready && mine(xi) {
					ids = append(ids, xi.ID)
				}
			}
			if len(ids) > 0 {
				x.log.Warn(why, zap.String("ns", c.DB+"."+c.Name), zap.Int("indexes", len(ids)))
				x.Abort(c, ids)
			}
		}
	}
}
