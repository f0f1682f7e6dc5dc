package sharding

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Layout changes in a cluster. The node a reshardCollection or unshardCollection reaches
// coordinates it, and is its only donor:
//
//  1. the temporary collection is created in the new layout over the shards asked (every
//     shard of the cluster for a reshard), marked with this node and the source's name
//     (store.Collection.ReshardNode, ReshardOf): from then on a second change of the
//     collection through any node is refused, abortReshardCollection through any node reaches
//     this one, and the partition manager of every node leaves the copy alone (no split, no
//     move).
//  2. gather: every partition of the source on another node's shard moves to one of this
//     node's shards, as moveChunk moves one (online, move_remote.go). From then on every write
//     of the source, whichever node the client uses, runs here (routers hand it to the owner),
//     so this node's write logs see them all, and its key-lock stripes hold them all off. No
//     partition of the source leaves this node while the change runs (MovePartition refuses),
//     and this node's manager rounds wait (the round lock), so none splits here either.
//  3. the copy, the catch-ups and the critical section run as on one node (reshard.go), but a
//     document whose new place is on another node's shard travels in batches over the
//     internal connection (_cleaveMoveApply op "reshard"), applied there in one synced batch
//     each with its index entries, as a move's batches are.
//  4. the commit, under the key locks, sends the transaction records of this node's shards
//     (the retryable writes' history, which the gather's moves brought here with the source's
//     partitions, and the writes during the change added) to every shard of another node in
//     the new layout, merged there as a move's are (move_records.go): a retry after the
//     commit reaches the document's new owner, which must know that its statement ran, as
//     MongoDB's resharding carries config.transactions. It then renames the copy over the
//     source in one etcd transaction, guarded by this node's incarnation; every node adopts
//     it from its catalog watch and deletes its share of whichever collection the change
//     dropped.
//
// A failure (a recipient down, an abort) drops the temporary collection: every node deletes
// its share of it. A coordinator that dies leaves it behind until its own restart drops it
// (repairAtStart drops the node's own) or the elected manager sees the node gone and drops it
// (dropOrphanReshards), so no half-done change stays in etcd. The source is untouched until
// the rename, though it may have been gathered onto the coordinator's shards; the balancer
// spreads it again.

// ReshardApplyOp is the _cleaveMoveApply step that writes a batch of a layout change's copy
// into a recipient's shard.
const ReshardApplyOp = "reshard"

// gatherAttempts bounds how many rounds of moves the gather runs before it gives up (each
// round moves what the previous left on other nodes: a split there meanwhile, a move by the
// balancer).
const gatherAttempts = 20

// reshardCoordinator returns this node's name when the layout change runs in a cluster, ""
// on a single node.
func (m *Manager) reshardCoordinator() string {
	if m.mopts.Cluster == nil {
		return ""
	}
	return m.mopts.Cluster.NodeName()
}

// layoutChangeRunning reports whether a layout change of db.name runs on this node.
func (m *Manager) layoutChangeRunning(db, name string) bool {
	_, ok := m.reshards.Load(db + "." + name)
	return ok
}

// refuseClusterMove refuses, in a cluster, a move of a layout change's temporary collection
// or of a partition of a source this node is gathering or copying: its writes must all reach
// this node's write logs.
func (m *Manager) refuseClusterMove(db, name string, from int) error {
	if m.mopts.Cluster == nil {
		return nil
	}
	if strings.HasPrefix(name, ReshardTempPrefix) || m.isLocal(from) && m.layoutChangeRunning(db, name) {
		return errMigrationsBlocked
	}
	return nil
}

// gatherSource moves every partition of op's source that is on another node's shard to one
// of this node's (cluster mode; nothing on a single node) and returns how many moves it made.
func (m *Manager) gatherSource(op *reshardOp) (moved int, err error) {
	if m.mopts.Cluster == nil {
		return 0, nil
	}
	spec := op.spec
	for attempt := 0; ; attempt++ {
		if op.abort.Load() {
			return moved, errReshardAborted(op)
		}
		c := m.cat.Store().State().Collection(spec.DB, spec.Coll)
		if c == nil {
			return moved, mongoerr.New(mongoerr.NamespaceNotFound, "Collection %s.%s does not exist", spec.DB, spec.Coll)
		}
		if c.NoMigrations {
			return moved, errMigrationsBlocked
		}
		local := m.localShards()
		if len(local) == 0 {
			return moved, mongoerr.New(mongoerr.ConflictingOperationInProgress,
				"%s cannot run on this node: it serves no shard now; send it to another node", spec.Command)
		}
		remote := 0
		for _, p := range c.Partitions {
			if m.isLocal(p.Shard) {
				continue
			}
			remote++
			to := m.gatherTarget(c, local)
			err := m.MovePartition(spec.DB, spec.Coll, p.ID, to, spec.Command)
			if err != nil && !retryableMove(err) {
				return moved, err
			}
			if err == nil {
				moved++
			} else {
				m.log.Info("a move of the layout change's gather failed; trying again", zap.String("ns", spec.DB+"."+spec.Coll),
					zap.Uint64("partition", p.ID), zap.Error(err))
			}
		}
		if remote == 0 {
			return moved, nil
		}
		if attempt >= gatherAttempts {
			return moved, mongoerr.New(mongoerr.ConflictingOperationInProgress,
				"%s could not bring %s.%s's partitions onto this node's shards; retry", spec.Command, spec.DB, spec.Coll)
		}
		time.Sleep(100 * time.Millisecond) // a failed move's partition changed: look again
	}
}

// retryableMove reports whether a move failed because its partition changed meanwhile (a
// split, another move, a busy destination): the next round of the gather looks again.
func retryableMove(err error) bool {
	if errors.Is(err, shard.ErrStaleAction) {
		return true
	}
	e := mongoerr.As(err)
	return e != nil && (e.Code == mongoerr.ConflictingOperationInProgress || e.Code == mongoerr.StaleConfig)
}

// gatherTarget returns the shard of local (this node's) that holds the fewest partitions of
// c, for a partition the gather brings here.
func (m *Manager) gatherTarget(c *store.Collection, local []int) int {
	best, fewest := local[0], -1
	for _, s := range local {
		n := 0
		for _, p := range c.Partitions {
			if p.Shard == s {
				n++
			}
		}
		if fewest < 0 || n < fewest {
			best, fewest = s, n
		}
	}
	return best
}

// sourceGuards returns the guards of a layout change's commit on this node: the
// incarnation of this node (and, for a replicated shard, the leader record naming it) for
// every shard of ci's; nil on a single node.
func (m *Manager) sourceGuards(ci *catalog.Coll) ([]store.Guard, error) {
	if m.mopts.Cluster == nil {
		return nil, nil
	}
	var out []store.Guard
	for _, s := range ci.Map.Shards() {
		g, err := m.sourceGuard(s)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// reshardRemote stages the entries of a layout change's copy for one shard of another node.
type reshardRemote struct {
	ab   *bsoncore.ArrayBuilder
	n    int
	size int
}

// add stages entry {h, id, d} (no d: delete the document).
func (r *reshardRemote) add(hash uint64, id []byte, doc bsoncore.Document) {
	if r.ab == nil {
		r.ab = bsoncore.NewArrayBuilder()
	}
	eb := bsoncore.NewDocumentBuilder().AppendInt64("h", int64(hash)).AppendBinary("id", 0, id)
	if doc != nil {
		eb.AppendDocument("d", doc)
	}
	r.ab.AppendDocument(eb.Build())
	r.n++
	r.size += len(doc) + len(id) + 32
}

// sendRemote sends the entries staged for shard sh of another node, applied there in one
// synced batch.
func (s *reshardSink) sendRemote(sh int, r *reshardRemote) error {
	if r.n == 0 {
		return nil
	}
	cmd := s.m.moveStep(s.dst, sh, 0, 0, ReshardApplyOp).AppendArray("entries", r.ab.Build()).
		AppendInt64("paceMillis", s.pace.Milliseconds()).AppendString("$db", s.dst.Meta.DB).Build()
	timeout := peerTimeout
	if s.locked {
		timeout = lockedPeerTimeout
	}
	_, err := s.m.peerCommandWithin(sh, cmd, timeout)
	if err != nil {
		return fmt.Errorf("%s's copy into %s failed: %w", s.dst.Meta.Name, catalog.ShardName(sh), err)
	}
	return nil
}

// sendReshardRecords sends the transaction records of every shard of this node to every
// shard of another node in tmp's layout (a layout change's commit, under the key locks); a
// single node reads the records of all its shards and sends nothing.
func (m *Manager) sendReshardRecords(tmp *catalog.Coll) error {
	sent := map[int]bool{}
	for i := range tmp.Map.Len() {
		to := tmp.Map.Partition(i).Shard
		if sent[to] || m.isLocal(to) {
			continue
		}
		sent[to] = true
		for _, from := range m.localShards() {
			if err := m.sendRecords(tmp, from, to, 0, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyReshard applies a batch of a layout change's copy (entries {h, id, d}) to shard s of
// this node, where ci is the change's temporary collection: the recipient's side of
// ReshardApplyOp.
func (m *Manager) applyReshard(ci *catalog.Coll, s int, entries bsoncore.Array, pace time.Duration) (int, error) {
	if !strings.HasPrefix(ci.Meta.Name, ReshardTempPrefix) {
		return 0, fmt.Errorf("%s.%s is not a layout change's copy", ci.Meta.DB, ci.Meta.Name)
	}
	vals, err := entries.Values()
	if err != nil {
		return 0, fmt.Errorf("malformed copy entries: %w", err)
	}
	for _, v := range vals {
		h, _ := v.Document().Lookup("h").Int64OK()
		if ci.Map.Partition(ci.Map.Locate(uint64(h))).Shard != s {
			return 0, fmt.Errorf("%w: %s does not own hash %d of %s", shard.ErrStaleAction, catalog.ShardName(s), uint64(h), ci.NS())
		}
	}
	return m.applyEntries(ci, s, entries, pace)
}

// coordinatorGrace is how long a layout change's coordinator must stay unregistered before
// the elected manager takes it for dead: a live node whose lease expired (a long pause, a
// loaded machine) registers again at once, and its change goes on.
const coordinatorGrace = 5 * time.Second

// dropOrphanReshards drops, on the elected manager, the temporary collections of layout
// changes whose coordinator is no longer in the cluster (it died mid-change, and has stayed
// unregistered for coordinatorGrace): their sources were never touched, and no node would
// finish them.
func (m *Manager) dropOrphanReshards() {
	c := m.mopts.Cluster
	if c == nil || !c.Leader() {
		return
	}
	now, down := time.Now(), map[string]time.Time{}
	defer func() { m.coordinatorsDown = down }()
	state := m.cat.Store().State()
	for _, db := range state.Databases() {
		for _, coll := range state.Collections(db.Name) {
			if coll.ReshardNode == "" || coll.ReshardNode == c.NodeName() || c.NodeUp(coll.ReshardNode) {
				continue
			}
			since, seen := m.coordinatorsDown[coll.ReshardNode]
			if !seen {
				since = now
			}
			down[coll.ReshardNode] = since
			if now.Sub(since) < coordinatorGrace {
				continue
			}
			unlock := m.cat.LockDDL()
			dropped, err := m.cat.Store().DropCollection(coll.DB, coll.Name)
			unlock()
			if err != nil {
				m.log.Warn("cannot drop the copy of a layout change whose node left", zap.String("ns", coll.DB+"."+coll.Name), zap.Error(err))
				continue
			}
			m.cat.DeleteData(dropped)
			m.log.Warn("aborted a layout change whose node left the cluster; the collection keeps its layout",
				zap.String("ns", coll.DB+"."+coll.ReshardOf), zap.String("node", coll.ReshardNode))
		}
	}
}

// ReshardCoordinator returns the node coordinating the layout change of db.coll in the
// cluster, as the catalog records it ("" when none runs, or on a single node).
func (m *Manager) ReshardCoordinator(db, coll string) string {
	state := m.cat.Store().State()
	for _, c := range state.Collections(db) {
		if c.ReshardNode != "" && c.ReshardOf == coll {
			return c.ReshardNode
		}
	}
	return ""
}

// NodeShard returns a shard served by node (to reach it through catalog.Peers), -1 if none.
func (m *Manager) NodeShard(node string) int {
	c := m.mopts.Cluster
	if c == nil {
		return -1
	}
	for s := range m.cat.Shards() {
		if n, _ := c.ShardHost(s); n == node {
			return s
		}
	}
	return -1
}

// ForwardToNode runs cmd on node (through a shard it serves) and returns its reply.
func (m *Manager) ForwardToNode(node string, cmd bsoncore.Document) (bsoncore.Document, error) {
	s := m.NodeShard(node)
	if s < 0 {
		return nil, mongoerr.New(mongoerr.HostUnreachable, "node %s serves no shard now", node)
	}
	return m.peerCommandWithin(s, cmd, lockedPeerTimeout)
}
