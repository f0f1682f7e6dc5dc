package host

import (
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/cluster"
)

// Leader balancing (reconcile's step 6): reads and writes are served by leaders, so their
// spread over the nodes is the load's. A node leading more shards than its share hands one
// leadership to a caught-up voter on a node leading fewer; every transfer leaves the shard
// without a serving leader for an election, a publication and a catalog catch-up, during
// which routers are answered StaleConfig and wait. Transfers must therefore stop once the
// spread is even: a transfer is made only when it narrows the spread (see balanceTarget),
// never back and forth between two nodes.

// balanceLeaders hands the leadership of r's shard to a caught-up voter on a node that leads
// fewer shards, when this node leads more than its share (balanceTarget decides). One
// transfer per round and node.
func (h *Host) balanceLeaders(r *hosted, p cluster.Placement, voters []uint64) {
	members := h.opts.Node.Members()
	leaders := h.opts.Node.Leaders()
	if len(members) < 2 || len(leaders) == 0 {
		return
	}
	leads := map[string]int{}
	for _, m := range members {
		leads[m.Name] = 0
	}
	for _, rec := range leaders {
		if _, up := leads[rec.Node]; up {
			leads[rec.Node]++
		}
	}
	me := h.opts.Node.Name()
	_, commit, _ := r.g.Progress(r.id)
	var candidates []cluster.Replica
	for _, rep := range p.Replicas {
		match, _, ok := r.g.Progress(rep.ID)
		if rep.ID != r.id && ok && match >= commit && slices.Contains(voters, rep.ID) {
			candidates = append(candidates, rep)
		}
	}
	to, ok := balanceTarget(me, len(leaders), leads, candidates)
	if !ok || !h.transferDue() {
		return
	}
	h.log.Info("handing a shard's leadership to a node that leads fewer", zap.Int("shard", r.shard),
		zap.String("to", to.Node), zap.Int("leads_here", leads[me]), zap.Int("leads_there", leads[to.Node]))
	r.g.TransferLeadership(to.ID)
}

// balanceTarget decides whether node me hands a leadership of one of its shards to another
// node, and to which of candidates (the shard's other caught-up voters, in placement order),
// given the shards with a leader (shards) and how many each node up leads (leads; nodes down
// are absent). me hands one over only when it leads more than the ceiling of the share
// (shards over the nodes up), and only to a node up that leads fewer than that ceiling, the
// one leading fewest (the first of them in candidates' order): the receiver then leads at
// most the ceiling, so it never hands the leadership back, and each transfer lowers the sum
// of the squares of the counts, so a run of transfers ends.
//
//	me a, shards 3, leads {a: 2, b: 1, c: 0}, candidates [b, c] → c
//	me a, shards 3, leads {a: 2, b: 1}, candidates [b]          → none: b would lead 2
//	me a, shards 5, leads {a: 3, b: 1, c: 1}, candidates [b, c] → b
func balanceTarget(me string, shards int, leads map[string]int, candidates []cluster.Replica) (cluster.Replica, bool) {
	if len(leads) == 0 {
		return cluster.Replica{}, false
	}
	ceil := (shards + len(leads) - 1) / len(leads)
	if leads[me] <= ceil {
		return cluster.Replica{}, false
	}
	var best cluster.Replica
	found := false
	for _, rep := range candidates {
		c, up := leads[rep.Node]
		if !up || rep.Node == me || c >= ceil {
			continue
		}
		if !found || c < leads[best.Node] {
			best, found = rep, true
		}
	}
	return best, found
}

// transferDue reports whether this node may start a leadership transfer now (one per
// reconcile round).
func (h *Host) transferDue() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.lastTransfer) < reconcileEvery {
		return false
	}
	h.lastTransfer = time.Now()
	return true
}
