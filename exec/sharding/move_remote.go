package sharding

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// Moves between nodes (cluster mode). The source's node runs the move, because it holds the
// key locks that make the commit's "no write in flight" hold:
//
//  1. begin: the destination's node deletes whatever it holds in [lo, hi) (a crashed
//     earlier attempt's copy) and marks the range incoming.
//  2. copy: the source diffs a snapshot of the range against the previous pass's snapshot
//     (the first pass against nothing) and sends the differences in batches
//     (_cleaveMoveApply op "apply": documents to put, keys to delete); the destination
//     applies each batch in one synced Pebble batch, rebuilding the index entries itself.
//     Passes repeat until one finds nothing new (at most three).
//  3. commit: under every key-lock stripe on the source, a last diff, then the ownership
//     flip, one catalog change (an etcd transaction). The destination is then told the
//     revision that owns the range (op "commit") and forgets its mark once it has it.
//  4. retire: the source range is deleted moveGrace later, as for a local move.
//
// A failure before the flip sends op "abort" (the destination deletes its copy). Crashes:
// before the flip the destination's copy is not owned; its node deletes it at its next start
// (repairAtStart), or when the incoming mark has seen no batch for incomingTimeout. After the
// flip the source's range is not owned, and the source's start deletes it.

// Internal commands and limits of moves between nodes.
const (
	// MovePartitionCmd asks the node owning a partition to move it.
	MovePartitionCmd = "_cleaveMovePartition"
	// MoveApplyCmd carries one step of a move to the destination's node.
	MoveApplyCmd = "_cleaveMoveApply"
	// moveBatchBytes bounds one apply batch's documents.
	moveBatchBytes = 2 << 20
	// moveBatchDocs bounds one apply batch's entries.
	moveBatchDocs = 2048
	// peerTimeout bounds one internal request of a move.
	peerTimeout = 2 * time.Minute
	// lockedPeerTimeout bounds one request of the commit's last pass, which the source's
	// writers wait for (it holds every key-lock stripe).
	lockedPeerTimeout = 20 * time.Second
	// incomingTimeout is how long an incoming range may go without a batch before its
	// destination deletes it as abandoned (its source crashed) and releases its DDL lock.
	incomingTimeout = 2 * time.Minute
	// beginDDLWait bounds how long a move's begin waits for its destination's DDL lock.
	beginDDLWait = 5 * time.Second
)

// peerCommand runs cmd on the node owning shard s, within peerTimeout.
func (m *Manager) peerCommand(s int, cmd bsoncore.Document) (bsoncore.Document, error) {
	return m.peerCommandWithin(s, cmd, peerTimeout)
}

// peerCommandWithin runs cmd on the node owning shard s, within d or until the manager stops
// (Stop: the node shuts down; ErrShutdown then).
func (m *Manager) peerCommandWithin(s int, cmd bsoncore.Document, d time.Duration) (bsoncore.Document, error) {
	return m.peerCommandCtx(m.life, s, cmd, d)
}

// peerCommandCtx runs cmd on the node owning shard s, within d, until ctx ends or the manager
// stops (ErrShutdown then).
func (m *Manager) peerCommandCtx(ctx context.Context, s int, cmd bsoncore.Document, d time.Duration) (bsoncore.Document, error) {
	if m.peers == nil {
		return nil, fmt.Errorf("%s is on another node and this node cannot reach other nodes", catalog.ShardName(s))
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	defer context.AfterFunc(m.life, cancel)()
	reply, err := m.peers.Command(ctx, s, cmd)
	if err != nil && m.life.Err() != nil {
		// NB: err (context.Canceled) is not wrapped: exec would answer ClientDisconnect.
		return nil, fmt.Errorf("%w: %s", ErrShutdown, err.Error())
	}
	return reply, err
}

// askMove asks the node owning shard from (partition id of ci) to move it to shard to.
func (m *Manager) askMove(ci *catalog.Coll, id uint64, from, to int, reason string) error {
	cmd := bsoncore.NewDocumentBuilder().
		AppendString(MovePartitionCmd, ci.Meta.Name).
		AppendInt64("collId", int64(ci.Meta.ID)).
		AppendInt64("rev", m.cat.Store().Revision()).
		AppendInt64("partition", int64(id)).
		AppendInt32("to", int32(to)).
		AppendString("reason", reason).
		AppendString("$db", ci.Meta.DB).Build()
	_, err := m.peerCommand(from, cmd)
	return err
}

// moveStep builds a _cleaveMoveApply request for ci's range [lo, hi) on shard to.
func (m *Manager) moveStep(ci *catalog.Coll, to int, lo, hi uint64, op string) *bsoncore.DocumentBuilder {
	return bsoncore.NewDocumentBuilder().
		AppendString(MoveApplyCmd, ci.Meta.Name).
		AppendInt64("collId", int64(ci.Meta.ID)).
		AppendInt64("rev", m.cat.Store().Revision()).
		AppendInt32("shard", int32(to)).
		AppendInt64("lo", int64(lo)).
		AppendInt64("hi", int64(hi)).
		AppendString("op", op)
}

// sendStep sends a step without entries and returns the reply.
func (m *Manager) sendStep(ci *catalog.Coll, to int, lo, hi uint64, op string) (bsoncore.Document, error) {
	return m.peerCommand(to, m.moveStep(ci, to, lo, hi, op).AppendString("$db", ci.Meta.DB).Build())
}

// beginMove sends a move's begin step to shard to and returns the guard of its flip: the
// incarnation of the destination's node, which its reply names, and for a replicated shard
// the revision of its leader record naming that node. A destination that restarts after
// begin deletes the copy (repairAtStart), and so does a new leader of its shard
// (RepairShard, after it publishes itself): the flip must not name the copy then.
func (m *Manager) beginMove(ci *catalog.Coll, to int, lo, hi uint64) ([]store.Guard, error) {
	reply, err := m.sendStep(ci, to, lo, hi, "begin")
	if err != nil {
		return nil, err
	}
	inc, ok := reply.Lookup("incarnation").Int64OK()
	c := m.mopts.Cluster
	if !ok || c == nil {
		return nil, fmt.Errorf("the destination of the move, %s, did not name its incarnation", catalog.ShardName(to))
	}
	node, ok := reply.Lookup("node").StringValueOK()
	if !ok {
		node, _ = c.ShardHost(to)
	}
	g := store.Guard{Node: node, Incarnation: inc, Shard: to}
	if rs, ok := c.(ReplicaSets); ok {
		leader, rev, err := rs.ShardLeader(to)
		if err != nil {
			return nil, err
		}
		if rev > 0 && leader != node {
			return nil, fmt.Errorf("%w: %s changed leaders while the move began (%s, then %s)",
				shard.ErrStaleAction, catalog.ShardName(to), node, leader)
		}
		g.LeaderRev = rev
	}
	return []store.Guard{g}, nil
}

// moveGuards begins a move on its destination and returns the guards of its flip: the
// destination's (beginMove) and the source's (sourceGuard).
func (m *Manager) moveGuards(ci *catalog.Coll, from, to int, lo, hi uint64) ([]store.Guard, error) {
	source, err := m.sourceGuard(from)
	if err != nil {
		return nil, err
	}
	guards, err := m.beginMove(ci, to, lo, hi)
	if err != nil {
		return nil, err
	}
	return append(guards, source), nil
}

// sourceGuard returns the guard of a move's flip on its source, shard from of this node: this
// node's incarnation and, for a replicated shard, the revision of the leader record naming
// this node. A leader that lost its group during the move (a new one took writes into the
// range meanwhile, which the move's passes never saw) must not flip the range away: the new
// leader published itself before it served (replica/host's BeforeServe), which fails the
// flip.
func (m *Manager) sourceGuard(from int) (store.Guard, error) {
	c := m.mopts.Cluster
	g := store.Guard{Node: c.NodeName(), Incarnation: c.Incarnation(), Shard: from}
	rs, ok := c.(ReplicaSets)
	if !ok {
		return g, nil
	}
	leader, rev, err := rs.ShardLeader(from)
	if err != nil {
		return g, err
	}
	if rev > 0 && leader != g.Node {
		return g, fmt.Errorf("%w: %s is led from %s now, not from this node", shard.ErrStaleAction, catalog.ShardName(from), leader)
	}
	g.LeaderRev = rev
	return g, nil
}

// moveToNode moves partition id of ci, [lo, hi), from this node's shard from to shard to of
// another node: the copy of the whole range, the catch-up passes (the documents the source's
// write log names), then the commit. It fills st.
func (m *Manager) moveToNode(ci *catalog.Coll, id uint64, from, to int, lo, hi uint64, st *moveStats) error {
	guards, err := m.moveGuards(ci, from, to, lo, hi)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			m.abortOnDestination(ci, to, lo, hi)
		}
	}()
	src := m.cat.Shards()[from]
	wlog, err := src.LogWrites(ci.Meta.ID, lo, hi) // before the copy's snapshot
	if err != nil {
		return catalog.StoreError(err)
	}
	defer wlog.Close()
	// pass sends the whole range (first, paced), or the documents the log names; the
	// commit's (locked) has a shorter timeout.
	pass := func(ci *catalog.Coll, first, locked bool) (copyCount, error) {
		var docs []store.LoggedDoc
		if !first {
			var overflow bool
			if docs, overflow = wlog.Take(); overflow {
				return copyCount{}, errLogOverflow
			}
			if len(docs) == 0 {
				return copyCount{}, nil
			}
		}
		snap, err := src.NewSnapshot()
		if err != nil {
			return copyCount{}, catalog.StoreError(err)
		}
		defer func() { _ = snap.Close() }()
		sink := &remoteSink{m: m, ci: ci, to: to, lo: lo, hi: hi, timeout: peerTimeout}
		switch {
		case first:
			sink.pace = maxCopyPace
		case locked:
			sink.timeout = lockedPeerTimeout
		}
		if first {
			return m.diffRange(ci.Meta.ID, snap, nil, lo, hi, sink)
		}
		return m.diffDocs(ci.Meta.ID, snap, nil, lo, hi, docs, sink)
	}
	err = m.copyPasses(st, func(first bool) (copyCount, error) { return pass(ci, first, false) })
	if err != nil {
		return err
	}
	flipping := false
	err = m.commitMove(ci, id, from, to, guards, st, func(ci *catalog.Coll, _, _ uint64) (copyCount, error) {
		n, err := pass(ci, false, true)
		if err == nil {
			err = m.sendRecords(ci, from, to, lo, hi)
		}
		flipping = err == nil
		return n, err
	})
	if errors.Is(err, store.ErrIncarnation) { // refused, certainly not committed: abort
		return fmt.Errorf("%w: the node of %s or %s, or the shard's leader, changed during the move: %w",
			shard.ErrStaleAction, catalog.ShardName(from), catalog.ShardName(to), err)
	}
	if err != nil {
		// NB: a flip that failed may still have committed (a lost etcd reply): no abort then,
		// which could delete the copy before the destination sees the flip; its sweep deletes
		// the copy later if it does not own the range (sweepIncoming). A flip refused as the
		// map changed first (another node's merge) did not commit: abort, freeing the destination.
		committed = flipping && flipUnsettled(err)
		return err
	}
	committed = true
	if _, err := m.sendStep(ci, to, lo, hi, "commit"); err != nil {
		m.log.Warn("the destination of a move did not hear of its commit; it finds out from the catalog",
			zap.String("ns", ci.NS()), zap.Int("to", to), zap.Error(err))
	}
	return nil
}

// abortOnDestination ends a move that did not commit on its destination, which deletes its
// copy (or, unreachable, deletes it later: sweepIncoming).
func (m *Manager) abortOnDestination(ci *catalog.Coll, to int, lo, hi uint64) {
	if _, err := m.sendStep(ci, to, lo, hi, "abort"); err != nil {
		m.log.Warn("cannot abort a move on its destination; it deletes the copy later",
			zap.String("ns", ci.NS()), zap.Int("to", to), zap.Error(err))
	}
}

// remoteSink sends the differences of a move's pass to the destination's node in batches.
type remoteSink struct {
	m      *Manager
	ci     *catalog.Coll
	to     int
	lo, hi uint64
	ab     *bsoncore.ArrayBuilder
	n      int
	size   int
	// timeout bounds each batch's request.
	timeout time.Duration
	// pace is how long the destination may wait before applying a batch, while its shard
	// is close to a write stall (catchup.go); the copy's only.
	pace time.Duration
}

// put implements rangeSink: an entry {h, id, d} (no d: delete the document).
func (s *remoteSink) put(hash uint64, id []byte, _, doc []byte) error {
	if s.ab == nil {
		s.ab = bsoncore.NewArrayBuilder()
	}
	eb := bsoncore.NewDocumentBuilder().AppendInt64("h", int64(hash)).AppendBinary("id", 0, id)
	if doc != nil {
		eb.AppendDocument("d", doc)
	}
	s.ab.AppendDocument(eb.Build())
	s.n++
	s.size += len(doc) + len(id) + 32
	return nil
}

// maybeFlush implements rangeSink.
func (s *remoteSink) maybeFlush() error {
	if s.n >= moveBatchDocs || s.size >= moveBatchBytes {
		return s.flush()
	}
	return nil
}

// flush implements rangeSink: the batch is applied, synced, on the destination.
func (s *remoteSink) flush() error {
	if s.n == 0 {
		return nil
	}
	cmd := s.m.moveStep(s.ci, s.to, s.lo, s.hi, "apply").AppendArray("entries", s.ab.Build()).
		AppendInt64("paceMillis", s.pace.Milliseconds()).AppendString("$db", s.ci.Meta.DB).Build()
	s.ab, s.n, s.size = nil, 0, 0
	_, err := s.m.peerCommandWithin(s.to, cmd, s.timeout)
	return err
}

// ReceiveMove runs one step of a move from another node into shard s of this node, for ci's
// range [lo, hi) (the owner's side of _cleaveMoveApply): "begin", "apply" (entries, applied
// after waiting at most pace while the shard is close to a write stall), "commit" (the
// caller has caught up with the revision of the flip) or "abort". It returns how many
// documents it changed.
func (m *Manager) ReceiveMove(ci *catalog.Coll, s int, lo, hi uint64, op string, entries bsoncore.Array, pace time.Duration) (int, error) {
	if !m.isLocal(s) {
		return 0, fmt.Errorf("%w: %s is not this node's", shard.ErrStaleAction, catalog.ShardName(s))
	}
	r := retiredRange{coll: ci.Meta.ID, shard: s, lo: lo, hi: hi}
	switch op {
	case "begin":
		if owns(ci, s, lo, hi) {
			return 0, fmt.Errorf("%w: %s already owns part of the range", shard.ErrStaleAction, catalog.ShardName(s))
		}
		if err := m.holdDDL(r); err != nil {
			return 0, err
		}
		m.touchIncoming(r)
		return 0, m.deleteUnowned(ci.Meta, s, lo, hi)
	case "apply":
		if owns(ci, s, lo, hi) {
			return 0, fmt.Errorf("%w: %s already owns part of the range", shard.ErrStaleAction, catalog.ShardName(s))
		}
		if !m.renewIncoming(r) { // this node restarted since begin, and deleted the copy
			return 0, fmt.Errorf("%w: no move into %s of this range has begun", shard.ErrStaleAction, catalog.ShardName(s))
		}
		return m.applyEntries(ci, s, entries, pace)
	case RecordsOp:
		if strings.HasPrefix(ci.Meta.Name, ReshardTempPrefix) { // a layout change's commit (reshard_cluster.go)
			return m.mergeRecords(s, entries)
		}
		if !m.renewIncoming(r) {
			return 0, fmt.Errorf("%w: no move into %s of this range has begun", shard.ErrStaleAction, catalog.ShardName(s))
		}
		return m.mergeRecords(s, entries)
	case ReshardApplyOp: // a layout change's copy into its temporary collection (reshard_cluster.go)
		return m.applyReshard(ci, s, entries, pace)
	case "commit":
		m.dropIncoming(r)
		return 0, nil
	case "abort":
		err := m.deleteUnowned(ci.Meta, s, lo, hi)
		m.dropIncoming(r)
		m.log.Info("a move into this node failed; its copy is deleted", zap.String("ns", ci.NS()),
			zap.Int("shard", s), zap.Uint64("lo", lo), zap.Uint64("hi", hi), zap.Error(err))
		return 0, err
	}
	return 0, fmt.Errorf("unknown move step %q", op)
}

// owns reports whether shard s owns some partition of ci overlapping [lo, hi).
func owns(ci *catalog.Coll, s int, lo, hi uint64) bool {
	for i := range ci.Map.Len() {
		plo, phi := ci.Map.Range(i)
		if ci.Map.Partition(i).Shard == s && overlaps(plo, phi, lo, hi) {
			return true
		}
	}
	return false
}

// applyEntries applies a batch of a move's entries to shard s in one synced batch, first
// waiting at most pace while the shard is close to a write stall.
func (m *Manager) applyEntries(ci *catalog.Coll, s int, entries bsoncore.Array, pace time.Duration) (int, error) {
	vals, err := entries.Values()
	if err != nil {
		return 0, fmt.Errorf("malformed move entries: %w", err)
	}
	db := m.cat.Shards()[s]
	rs := &rangeSyncer{ci: ci, db: db}
	if pace = min(pace, maxCopyPace); pace > 0 {
		rs.pace = func() { db.PaceBulkWrite(m.life, pace) }
	}
	defer rs.Close()
	n := 0
	for _, v := range vals {
		e, ok := v.DocumentOK()
		if !ok {
			return n, errors.New("malformed move entry")
		}
		h, _ := e.Lookup("h").Int64OK()
		_, id, ok := e.Lookup("id").BinaryOK()
		if !ok {
			return n, errors.New("move entry without an id")
		}
		doc, _ := e.Lookup("d").DocumentOK()
		cur, err := db.GetDoc(ci.Meta.ID, uint64(h), id, nil)
		switch {
		case errors.Is(err, store.ErrNotFound):
			cur = nil
		case err != nil:
			return n, catalog.StoreError(err)
		}
		if bytes.Equal(cur, doc) {
			continue
		}
		if err := rs.put(uint64(h), id, cur, doc); err != nil {
			return n, err
		}
		n++
	}
	return n, rs.flush()
}

// touchIncoming records (or renews) r as a range another node is copying into this one.
func (m *Manager) touchIncoming(r retiredRange) {
	if m.renewIncoming(r) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r.due = time.Now().Add(incomingTimeout)
	m.mu.copying = append(m.mu.copying, r)
}

// renewIncoming renews the incoming range r, if it is recorded.
func (m *Manager) renewIncoming(r retiredRange) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, c := range m.mu.copying {
		if sameRange(c, r) {
			m.mu.copying[k].due = time.Now().Add(incomingTimeout)
			return true
		}
	}
	return false
}

// holdDDL takes this node's DDL lock and enters its move fence for the incoming range r,
// from the move's begin until its commit or abort, or until the range is abandoned
// (sweepIncoming, after incomingTimeout without a batch): no index build or drop runs on
// this node while it holds a copy it does not own yet (a build's fill would skip it). It
// waits at most beginDDLWait (a DDL operation of this node, another move into it, another
// node's fill here): the move then fails and is tried again later.
func (m *Manager) holdDDL(r retiredRange) error {
	r.due = time.Time{}
	m.mu.Lock()
	_, held := m.mu.incomingDDL[r]
	m.mu.Unlock()
	if held { // begin again (the source retried)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), beginDDLWait)
	defer cancel()
	unlock, err := m.cat.LockDDLCtx(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s is busy with another DDL operation or move", shard.ErrStaleAction, catalog.ShardName(r.shard))
	}
	leave, err := m.enterMoveFence(r.shard)
	if err != nil {
		unlock()
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.incomingDDL == nil {
		m.mu.incomingDDL = map[retiredRange]func(){}
	}
	m.mu.incomingDDL[r] = func() { leave(); unlock() }
	return nil
}

// dropIncoming forgets the incoming range r and releases the DDL lock it holds.
func (m *Manager) dropIncoming(r retiredRange) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := r
	key.due = time.Time{}
	if unlock, ok := m.mu.incomingDDL[key]; ok {
		delete(m.mu.incomingDDL, key)
		unlock()
	}
	for k, c := range m.mu.copying {
		if sameRange(c, r) {
			m.mu.copying = append(m.mu.copying[:k], m.mu.copying[k+1:]...)
			return
		}
	}
}

// sameRange reports whether a and b name the same range, whatever their due times.
func sameRange(a, b retiredRange) bool {
	a.due, b.due = time.Time{}, time.Time{}
	return a == b
}

// sweepIncoming deletes the incoming ranges whose source went silent for incomingTimeout
// (where this node does not own them by now) and forgets them. It forgets at once, deleting
// nothing, the ranges of shards this node no longer serves (a replicated shard whose
// leadership moved): their copy is the new leader's to delete (Manager.RepairShard, or the
// move's abort, which goes to it), and this node could not (its stand-in for the shard
// refuses), so it would hold its DDL lock forever otherwise.
func (m *Manager) sweepIncoming() {
	now := time.Now()
	m.mu.Lock()
	copying := slices.Clone(m.mu.copying)
	m.mu.Unlock()
	var stale, gone []retiredRange
	for _, r := range copying { // isLocal asks the cluster view: not under m.mu
		switch {
		case !m.isLocal(r.shard):
			gone = append(gone, r)
		case !r.due.IsZero() && now.After(r.due):
			stale = append(stale, r)
		}
	}
	for _, r := range gone {
		m.log.Info("forgot an incoming range of a shard this node no longer serves",
			zap.Int("shard", r.shard), zap.Uint64("lo", r.lo), zap.Uint64("hi", r.hi))
		m.dropIncoming(r)
	}
	for _, r := range stale {
		if c := m.cat.Store().State().CollectionByID(r.coll); c != nil {
			if err := m.deleteUnowned(c, r.shard, r.lo, r.hi); err != nil {
				m.log.Warn("cannot delete an abandoned incoming range; the next start will",
					zap.String("ns", c.DB+"."+c.Name), zap.Int("shard", r.shard), zap.Error(err))
				continue
			}
		}
		m.dropIncoming(r)
	}
}
