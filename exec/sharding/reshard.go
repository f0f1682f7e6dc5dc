package sharding

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Changing a collection's layout online: reshardCollection (a new shard key, or the same one
// redistributed), moveCollection (an unsharded collection to another shard) and
// unshardCollection (a sharded collection into one partition) all run Reshard, MongoDB's
// resharding in one process:
//
//   - a temporary collection <db>.system.resharding.<uuid> is created in the new layout (its
//     shard key, partitions and shards), with the source's options, validator and indexes;
//   - every shard of this node logs the source's writes (store.WriteLog) from before the
//     copy's snapshots, so nothing written during the copy is missed;
//   - the copy reads the source from those snapshots and writes each document into the
//     temporary collection at the place its new key gives it, with its index entries; writes
//     go on meanwhile;
//   - catch-up passes take the logs and copy again only the documents they name (MongoDB's
//     oplog application), until a pass is small (or commitReshardCollection asks);
//   - the critical section takes every key-lock stripe (writes wait), copies the last
//     logged writes, then renames the temporary collection over the source in ONE catalog
//     commit and releases the locks; the source's data is deleted afterwards. A writer that
//     waited for the locks with the source's record answers StaleConfig and is re-run on the
//     new collection (exec/write's replaced check).
//
// Until the rename the source is untouched: an abort, a failure or a crash (the next start
// drops every system.resharding.* collection, repairAtStart) leaves it as it was, under its
// old key. The partition manager's rounds wait while a layout change runs, so that no split
// or move of the source or of the temporary collection meets the copy.

// ReshardTempPrefix starts the name of a layout change's temporary collection.
const ReshardTempPrefix = "system.resharding."

// ReshardSpec is a layout change to run.
type ReshardSpec struct {
	DB, Coll string
	// Key is the new shard key; nil makes the collection unsharded (one partition).
	Key bsoncore.Document
	// NumInitialChunks asks for that many partitions (0: as shardCollection would choose).
	NumInitialChunks int
	// Shards are the shards the new partitions spread over, at least one.
	Shards []int
	// Command is the command that asked (reshardCollection, moveCollection,
	// unshardCollection): currentOp's provenance.
	Command string
	// Original is the command's body, for currentOp's originatingCommand.
	Original bsoncore.Document
}

// ReshardStats is what a finished layout change did.
type ReshardStats struct {
	Copied  int64         // documents the copy wrote
	Applied int64         // logged writes the catch-ups and the critical section applied
	Passes  int           // catch-up passes before the critical section
	Blocked time.Duration // how long the critical section held writes
	Took    time.Duration // the whole operation
	// Gathered is how many partitions moved onto this node's shards first (cluster mode,
	// reshard_cluster.go).
	Gathered int
}

// reshardOp is a layout change in flight: what currentOp shows, and its abort and commit
// requests.
type reshardOp struct {
	spec    ReshardSpec
	uuid    [16]byte
	tmp     string
	started time.Time
	// totalDocs and totalBytes estimate what there is to copy.
	totalDocs, totalBytes atomic.Int64
	copied, applied       atomic.Int64
	bytesCopied           atomic.Int64
	phase                 atomic.Value // string: MongoDB's recipient states
	cloneDone             atomic.Int64 // unix nanoseconds when the copy ended, 0 before
	abort, commit         atomic.Bool
}

// setPhase records op's phase for currentOp.
func (op *reshardOp) setPhase(p string) { op.phase.Store(p) }

// Reshard runs layout change spec to its end (the rename) or to a failure, which leaves the
// source as it was. Only one change per collection runs at a time
// (ReshardCollectionInProgress); abortReshardCollection makes it fail with
// ReshardCollectionAborted.
func (m *Manager) Reshard(spec ReshardSpec) (*store.Collection, ReshardStats, error) {
	ns := spec.DB + "." + spec.Coll
	op := &reshardOp{spec: spec, started: time.Now()}
	_, _ = rand.Read(op.uuid[:])
	op.tmp = ReshardTempPrefix + hex.EncodeToString(op.uuid[:])
	op.setPhase("initializing")
	if _, busy := m.reshards.LoadOrStore(ns, op); busy {
		return nil, ReshardStats{}, mongoerr.New(mongoerr.ReshardCollectionInProgress,
			"A resharding operation is already in progress for namespace %s", ns)
	}
	defer m.reshards.Delete(ns)
	if node := m.ReshardCoordinator(spec.DB, spec.Coll); node != "" { // another node's, in a cluster
		return nil, ReshardStats{}, mongoerr.New(mongoerr.ReshardCollectionInProgress,
			"A resharding operation is already in progress for namespace %s (run by node %s)", ns, node)
	}
	m.round.Lock() // no split or move of the source or of the copy meanwhile
	defer m.round.Unlock()
	src, tmp, err := m.createReshardTemp(op)
	if err != nil {
		return nil, ReshardStats{}, err
	}
	out, st, err := m.gatherAndCopy(op, src, tmp)
	st.Took = time.Since(op.started)
	if err != nil {
		m.dropReshardTemp(tmp)
		m.log.Warn("layout change failed; the collection keeps its layout", zap.String("cmd", spec.Command),
			zap.String("ns", ns), zap.Error(err))
		return nil, st, err
	}
	m.AfterMapChange()
	m.log.Info("changed a collection's layout", zap.String("cmd", spec.Command), zap.String("ns", ns),
		zap.Int("gathered", st.Gathered), zap.Int64("copied", st.Copied), zap.Int64("applied", st.Applied), zap.Int("passes", st.Passes),
		zap.Duration("blocked", st.Blocked), zap.Duration("took", st.Took), zap.Int("partitions", len(out.Partitions)))
	return out, st, nil
}

// AbortReshard asks the layout change of db.coll to stop; false when none runs.
func (m *Manager) AbortReshard(db, coll string) bool {
	v, ok := m.reshards.Load(db + "." + coll)
	if ok {
		v.(*reshardOp).abort.Store(true)
	}
	return ok
}

// CommitReshard asks the layout change of db.coll to enter its critical section after the
// pass running now; false when none runs.
func (m *Manager) CommitReshard(db, coll string) bool {
	v, ok := m.reshards.Load(db + "." + coll)
	if ok {
		v.(*reshardOp).commit.Store(true)
	}
	return ok
}

// errReshardAborted is the failure of a layout change abortReshardCollection stopped.
func errReshardAborted(op *reshardOp) error {
	return mongoerr.New(mongoerr.ReshardCollectionAborted, "%s of %s.%s was aborted by abortReshardCollection",
		op.spec.Command, op.spec.DB, op.spec.Coll)
}

// createReshardTemp creates op's temporary collection in the new layout, under the DDL
// lock, and returns the source's record and the temporary one's.
func (m *Manager) createReshardTemp(op *reshardOp) (src, tmp *store.Collection, err error) {
	unlock := m.cat.LockDDL()
	defer unlock()
	spec := op.spec
	src = m.cat.Store().State().Collection(spec.DB, spec.Coll)
	if src == nil {
		return nil, nil, mongoerr.New(mongoerr.NamespaceNotFound, "Collection %s.%s does not exist", spec.DB, spec.Coll)
	}
	if node := m.ReshardCoordinator(spec.DB, spec.Coll); node != "" {
		return nil, nil, mongoerr.New(mongoerr.ReshardCollectionInProgress,
			"A resharding operation is already in progress for namespace %s.%s (run by node %s)", spec.DB, spec.Coll, node)
	}
	for _, x := range src.Indexes {
		if !x.Ready {
			return nil, nil, mongoerr.New(mongoerr.ConflictingOperationInProgress,
				"Cannot run %s on %s.%s while the index %s is being built", spec.Command, spec.DB, spec.Coll, x.Name)
		}
	}
	n := 1
	if spec.Key != nil {
		n = shard.InitialCount(float64(src.Throughput), m.opts.PartitionMaxRU, spec.NumInitialChunks, len(spec.Shards))
	}
	parts := StoreParts(shard.InitialLayout(n, len(spec.Shards), 0))
	for i := range parts {
		parts[i].ID = 0 // the catalog assigns fresh ids
		parts[i].Shard = spec.Shards[parts[i].Shard]
	}
	tmp, err = m.cat.Store().CreateCollection(store.Collection{DB: spec.DB, Name: op.tmp, Options: src.Options,
		ShardKey: spec.Key, Throughput: src.Throughput, Autoscale: src.Autoscale, BurstCapacity: src.BurstCapacity,
		ThrottleRetryMS: src.ThrottleRetryMS, Indexes: src.Indexes, NextIndexID: src.NextIndexID, Partitions: parts,
		ReshardNode: m.reshardCoordinator(), ReshardOf: spec.Coll})
	if errors.Is(err, store.ErrReshardRunning) { // another node's, created meanwhile
		return nil, nil, mongoerr.New(mongoerr.ReshardCollectionInProgress,
			"A resharding operation is already in progress for namespace %s.%s", spec.DB, spec.Coll)
	}
	if err != nil {
		return nil, nil, catalog.ChangeError(err, spec.DB, op.tmp)
	}
	return src, tmp, nil
}

// dropReshardTemp drops a failed layout change's temporary collection and its data.
func (m *Manager) dropReshardTemp(tmp *store.Collection) {
	unlock := m.cat.LockDDL()
	dropped, err := m.cat.Store().DropCollection(tmp.DB, tmp.Name)
	unlock()
	if errors.Is(err, store.ErrNotFound) { // dropped by the elected manager (reshard_cluster.go)
		dropped, err = tmp, nil
	}
	if err != nil {
		m.log.Warn("cannot drop a resharding collection; the next start will", zap.String("ns", tmp.DB+"."+tmp.Name), zap.Error(err))
		return
	}
	m.cat.DeleteData(dropped)
}

// dropReshardLeftovers drops the temporary collections of layout changes a crash
// interrupted: their sources were never touched. The caller holds the DDL lock.
func (m *Manager) dropReshardLeftovers() {
	state := m.cat.Store().State()
	for _, db := range state.Databases() {
		for _, c := range state.Collections(db.Name) {
			if !strings.HasPrefix(c.Name, ReshardTempPrefix) || c.ReshardNode != m.reshardCoordinator() {
				continue // in a cluster, another node's change runs on
			}
			dropped, err := m.cat.Store().DropCollection(c.DB, c.Name)
			if err != nil {
				m.log.Warn("cannot drop an interrupted resharding collection", zap.String("ns", c.DB+"."+c.Name), zap.Error(err))
				continue
			}
			m.cat.DeleteData(dropped)
			m.log.Warn("aborted a layout change a restart interrupted; the collection keeps its layout",
				zap.String("ns", c.DB+"."+c.Name))
		}
	}
}

// gatherAndCopy brings the source onto this node's shards (in a cluster,
// reshard_cluster.go), then copies it into tmp while writes go on and commits.
func (m *Manager) gatherAndCopy(op *reshardOp, src, tmp *store.Collection) (*store.Collection, ReshardStats, error) {
	gathered, err := m.gatherSource(op)
	if err == nil {
		src, err = m.gatheredSource(op, src)
	}
	if err != nil {
		return nil, ReshardStats{Gathered: gathered}, err
	}
	out, st, err := m.runReshard(op, src, tmp)
	st.Gathered = gathered
	return out, st, err
}

// gatheredSource returns the source's record once gathered on this node's shards (src as
// the change began) and counts what there is to copy; it fails if the source was replaced, or
// a partition left meanwhile.
func (m *Manager) gatheredSource(op *reshardOp, src *store.Collection) (*store.Collection, error) {
	cur := m.cat.Store().State().Collection(src.DB, src.Name)
	switch {
	case cur == nil || cur.ID != src.ID:
		return nil, mongoerr.New(mongoerr.ReshardCollectionAborted,
			"%s.%s was dropped or renamed while %s began", src.DB, src.Name, op.spec.Command)
	case !m.allLocal(cur):
		return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress,
			"%s.%s's partitions left this node while %s began; retry", src.DB, src.Name, op.spec.Command)
	}
	for _, sh := range m.localShards() {
		d, b := m.cat.Shards()[sh].CollStats(cur.ID)
		op.totalDocs.Add(d)
		op.totalBytes.Add(b)
	}
	return cur, nil
}

// runReshard copies src into tmp while writes go on, then commits (reshard_copy.go).
func (m *Manager) runReshard(op *reshardOp, src, tmp *store.Collection) (*store.Collection, ReshardStats, error) {
	var st ReshardStats
	sci, err := m.cat.Info(src)
	if err != nil {
		return nil, st, err
	}
	tci, err := m.cat.Info(tmp)
	if err != nil {
		return nil, st, err
	}
	var logs []*store.WriteLog
	defer func() {
		for _, l := range logs {
			l.Close()
		}
	}()
	for _, sh := range m.localShards() { // in a cluster, the gather brought the source here
		l, err := m.cat.Shards()[sh].LogWrites(src.ID, 0, 0)
		if err != nil {
			return nil, st, catalog.StoreError(err)
		}
		logs = append(logs, l)
	}
	sink := newReshardSink(m, sci, tci)
	defer sink.close()
	op.setPhase("cloning")
	sink.pace = maxCopyPace
	if err := m.reshardClone(op, sink); err != nil {
		return nil, st, err
	}
	sink.pace = 0
	op.cloneDone.Store(time.Now().UnixNano())
	op.setPhase("applying")
	if st.Passes, err = m.reshardCatchUps(op, sink, logs); err != nil {
		return nil, st, err
	}
	out, blocked, err := m.reshardCommit(op, sink, logs, src, tmp)
	st.Blocked = blocked
	st.Copied, st.Applied = op.copied.Load(), op.applied.Load()
	return out, st, err
}

// reshardCatchUps runs catch-up passes until one applies lockedCatchUpDocs writes or fewer
// (or maxLockedDocs after minCatchUps), or commitReshardCollection asked; it returns how many
// ran.
func (m *Manager) reshardCatchUps(op *reshardOp, sink *reshardSink, logs []*store.WriteLog) (int, error) {
	for pass := 1; ; pass++ {
		if op.abort.Load() {
			return pass - 1, errReshardAborted(op)
		}
		n, err := m.reshardCatchUp(op, sink, logs)
		if err != nil {
			return pass, err
		}
		if n <= lockedCatchUpDocs || op.commit.Load() || pass >= minCatchUps && n <= maxLockedDocs {
			return pass, nil
		}
		if pass >= maxCatchUps {
			return pass, fmt.Errorf("%w: the collection is written faster than %s copies it", shard.ErrStaleAction, op.spec.Command)
		}
	}
}

// reshardCommit is the critical section: under the DDL lock and every key-lock stripe it
// applies the last logged writes (every batch of the copy is synced), checks that the source
// is still the collection copied, and renames the copy over it. It returns the new record and
// how long writes were held.
func (m *Manager) reshardCommit(op *reshardOp, sink *reshardSink, logs []*store.WriteLog, src, tmp *store.Collection) (*store.Collection, time.Duration, error) {
	unlockDDL := m.cat.LockDDL() // before the key locks: an index build holds it while it waits for writers
	defer unlockDDL()
	unlock := m.cat.Locks().LockAll()
	locked := time.Now()
	op.setPhase("blocking-writes")
	out, dropped, err := m.reshardFlip(op, sink, logs, src, tmp)
	unlock()
	blocked := time.Since(locked)
	if err != nil {
		return nil, blocked, err
	}
	m.cat.DeleteData(dropped)
	return out, blocked, nil
}

// reshardFlip is reshardCommit's part under the locks.
func (m *Manager) reshardFlip(op *reshardOp, sink *reshardSink, logs []*store.WriteLog, src, tmp *store.Collection) (out, dropped *store.Collection, err error) {
	if op.abort.Load() {
		return nil, nil, errReshardAborted(op)
	}
	sink.locked = true
	if _, err := m.reshardCatchUp(op, sink, logs); err != nil {
		return nil, nil, err
	}
	cur := m.cat.Store().State().Collection(src.DB, src.Name)
	if cur == nil || cur.ID != src.ID || !sameIndexes(cur, tmp) || !m.allLocal(cur) {
		return nil, nil, mongoerr.New(mongoerr.ReshardCollectionAborted,
			"%s.%s was dropped, renamed, moved or had its indexes changed while %s ran", src.DB, src.Name, op.spec.Command)
	}
	guards, err := m.sourceGuards(m.cat.Refresh(sink.src))
	if err != nil {
		return nil, nil, err
	}
	if err := m.sendReshardRecords(sink.dst); err != nil {
		return nil, nil, err
	}
	op.setPhase("committing")
	if _, err := m.cat.Store().UpdateCollection(tmp.DB, tmp.Name, func(x *store.Collection) error {
		for i := range x.Indexes { // the multikey paths the writes during the copy added
			if ci := cur.Index(x.Indexes[i].Name); ci != nil {
				x.Indexes[i].MultikeyPaths = append([]string(nil), ci.MultikeyPaths...)
				x.Indexes[i].MultikeyUnknown = ci.MultikeyUnknown
			}
		}
		x.Options = cur.Options // a collMod meanwhile (validator, ...)
		return nil
	}); err != nil {
		return nil, nil, catalog.ChangeError(err, tmp.DB, tmp.Name)
	}
	out, dropped, err = m.cat.Store().RenameCollectionGuarded(tmp.DB, tmp.Name, src.DB, src.Name, true, guards)
	if err != nil {
		return nil, nil, catalog.ChangeError(err, src.DB, src.Name)
	}
	return out, dropped, nil
}

// allLocal reports whether every partition of c is on a shard of this node.
func (m *Manager) allLocal(c *store.Collection) bool {
	for _, p := range c.Partitions {
		if !m.isLocal(p.Shard) {
			return false
		}
	}
	return true
}

// sameIndexes reports whether a and b have the same indexes by name and key pattern.
func sameIndexes(a, b *store.Collection) bool {
	if len(a.Indexes) != len(b.Indexes) {
		return false
	}
	for _, x := range a.Indexes {
		y := b.Index(x.Name)
		if y == nil || !x.Ready || string(y.Key) != string(x.Key) || string(y.Spec) != string(x.Spec) {
			return false
		}
	}
	return true
}
