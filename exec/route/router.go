package route

import (
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/sharding"
)

// Router answers, for the commands, what spans the shards of a collection wherever they are:
// its sizes and document counts, its validation, whether it spans other nodes. On a single
// node every shard is local and nodes is nil.
type Router struct {
	cat   *catalog.Catalog
	mgr   *sharding.Manager
	nodes *Nodes
	// pins are the transactions this node forwards to the node they run on (txn.go).
	pins txnPins
}

// New returns the router over cat's shards, counting documents with mgr's statistics and
// reaching other nodes through nodes (nil on a single node).
func New(cat *catalog.Catalog, mgr *sharding.Manager, nodes *Nodes) *Router {
	return &Router{cat: cat, mgr: mgr, nodes: nodes}
}
