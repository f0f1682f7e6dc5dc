package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"
)

// A shared catalog is one catalog held by several nodes (cluster mode). The records stay
// what they are on one node — databases, collections with their indexes and partition maps,
// users and roles, the collection-ID counter — but a change is first committed to a
// SharedLog (etcd, in package cluster), conditioned on the revision of the log the node's
// state reflects, and only then written to the local Pebble catalog and published. Changes
// other nodes commit arrive through ApplyShared, in revision order. So:
//
//   - every node's state is the log's state at some revision (never a mix), and readers keep
//     reading it lock-free from State, with no remote call per request;
//   - two nodes can never both commit a change computed from the same state: the second one
//     gets a *ConflictError, waits until its state reaches the winner's revision, and runs
//     its change again on that state (where, say, a split of a partition the winner already
//     split fails with the caller's own "stale" error);
//   - the local Pebble records are a mirror of the log, kept so that tools and a restart see
//     a consistent catalog; the log is the truth (Share replaces the mirror).
//
// Single-node mode never calls Share: mutate then commits to Pebble alone, as before.

// CatalogOp is one change of a catalog record: Key is the record's key in the catalog's key
// space (store-private: callers carry it verbatim), Value its encoding, nil for a delete.
type CatalogOp struct {
	Key, Value []byte
}

// SharedLog is where a shared catalog commits its changes. Revisions increase with every
// committed change, and every change carries the revision it was committed at.
type SharedLog interface {
	// Commit applies ops atomically if no change was committed after revision rev, and
	// returns the revision of the new change. If one was, it applies nothing and returns a
	// *ConflictError with the latest revision it knows of. It also applies nothing, and
	// returns ErrIncarnation, if a guard no longer holds (Guard).
	Commit(rev int64, ops []CatalogOp, guards []Guard) (int64, error)
	// Revision returns the revision of the latest change committed, as of the call (a
	// linearizable read): every change committed before the call is at or below it.
	Revision(ctx context.Context) (int64, error)
}

// Guard is a condition of a shared catalog change. It names one run of a node: the change
// commits only while that node has not restarted since (in a cluster, while its registration
// is under the lease it had then). With LeaderRev, it also names the published leader of a
// replicated shard: the change commits only while shard Shard's leader record is still the
// one written at LeaderRev. A move's flip is guarded by its destination, because a restart,
// or a new leader of the destination's shard, deletes the copy the flip would name.
type Guard struct {
	Node        string
	Incarnation int64
	// Shard and LeaderRev (when LeaderRev > 0): the revision, as the cluster's metadata
	// store numbers them, at which shard Shard's leader record was written.
	Shard     int
	LeaderRev int64
}

// ErrIncarnation reports that a guarded change was refused: a node it depends on restarted
// (or lost its registration), or a shard it depends on changed leaders, since it began.
var ErrIncarnation = errors.New("store: a node the change depends on is no longer the same incarnation")

// ConflictError reports that a shared catalog's log moved past the revision a change was
// computed from: the change was not applied.
type ConflictError struct {
	// Rev is the log's revision when the commit was refused (0 when unknown).
	Rev int64
}

// Error implements error.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("store: the shared catalog is at revision %d: the change must be computed again", e.Rev)
}

// maxConflictRetries bounds how often mutate computes a change again after conflicts: with
// catalog changes rare, reaching it means something is wrong (a watch that stalled).
const maxConflictRetries = 32

// revisionWait is how long a conflicted change waits for the node's state to catch up with
// the log before giving up.
const revisionWait = 10 * time.Second

// ErrCatalogBehind is returned when the shared catalog's state did not reach a revision in
// time: this node lost the log's changes (its watch stalled), so it refuses to change the
// catalog rather than compute a change from an old state.
var ErrCatalogBehind = errors.New("store: the shared catalog did not catch up with the cluster")

// sharedCatalog is the state of sharing, guarded by Catalog.mu.
type sharedCatalog struct {
	log SharedLog
	// rev is the log revision the published state reflects.
	rev int64
	// advanced is closed (and replaced) whenever rev advances.
	advanced chan struct{}
}

// LocalImage returns every record of the local catalog as puts: what a node seeds an empty
// shared log with.
func (c *Catalog) LocalImage() ([]CatalogOp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, err := c.db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixCatalog}, UpperBound: []byte{prefixCatalog + 1}})
	if err != nil {
		return nil, err
	}
	var ops []CatalogOp
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, errors.Join(err, it.Close())
		}
		ops = append(ops, CatalogOp{Key: bytes.Clone(it.Key()), Value: bytes.Clone(v)})
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, err
	}
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(c.mu.nextColl))
	return append(ops, CatalogOp{Key: bytes.Clone(nextCollKey), Value: buf[:]}), nil
}

// Share makes c a shared catalog: image (every record of the log at revision rev) replaces
// the local records, and from now on changes commit through log. It refuses an image in
// which a collection this node holds has another UUID, or that lacks one whose ID the
// cluster never assigned (at or above its counter): the node's data would otherwise be read
// as another collection's, or dropped as an orphan of a collection the cluster never knew.
// A collection the image lacks whose ID the cluster did assign was dropped while this node
// was away (a drop, a dropDatabase, a layout change's copy given up): its data is an orphan,
// which the node deletes at start (OrphanCollections).
func (c *Catalog) Share(log SharedLog, rev int64, image []CatalogOp) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := newEdit(emptyState())
	next, err := applyOps(e, image, 0)
	if err != nil {
		return fmt.Errorf("store: the shared catalog at revision %d: %w", rev, err)
	}
	for id, local := range c.state.Load().byID {
		if NodeLocalDB(local.DB) || local.ReshardNode != "" && e.s.byID[id] == nil {
			continue // a layout change's copy the cluster gave up while its coordinator was away
		}
		shared := e.s.byID[id]
		if shared == nil && id < next {
			c.db.logger.Info("a collection was dropped while this node was away; its data goes",
				zap.String("ns", local.DB+"."+local.Name), zap.Uint32("coll_id", uint32(id)))
			continue
		}
		if shared == nil || shared.UUID != local.UUID {
			return fmt.Errorf("%w: collection %s.%s (id %d) of this node is not in the cluster's catalog",
				ErrInvalid, local.DB, local.Name, id)
		}
	}
	c.mu.shared = &sharedCatalog{log: log, advanced: make(chan struct{})}
	_, err = c.reload(rev, image)
	return err
}

// Resync replaces the state with image, every record of the log at revision rev: what a
// node does when it missed changes (its watch fell behind the log's compaction). It returns
// the collections that are gone, whose local data the caller deletes.
func (c *Catalog) Resync(rev int64, image []CatalogOp) (dropped []*Collection, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.shared == nil {
		return nil, fmt.Errorf("%w: the catalog is not shared", ErrInvalid)
	}
	return c.reload(rev, image)
}

// reload replaces the state and the local records with image at revision rev; the caller
// holds c.mu and has set c.mu.shared.
func (c *Catalog) reload(rev int64, image []CatalogOp) (dropped []*Collection, err error) {
	e := newEdit(emptyState())
	next, err := applyOps(e, image, 0)
	if err != nil {
		return nil, fmt.Errorf("store: the shared catalog at revision %d: %w", rev, err)
	}
	b := c.db.pdb.NewBatch()
	defer func() { _ = b.Close() }()
	_ = b.DeleteRange([]byte{prefixCatalog}, []byte{prefixCatalog + 1}, nil)
	_ = b.Delete(nextCollKey, nil)
	for _, op := range image {
		_ = b.Set(op.Key, op.Value, nil)
	}
	old := c.state.Load()
	for name, d := range old.dbs { // this node's own records stay
		if NodeLocalDB(name) {
			e.putDatabase(d)
			_ = b.Set(databaseKey(name), encodeDatabase(d), nil)
		}
	}
	for _, coll := range old.byID {
		if NodeLocalDB(coll.DB) {
			e.putCollection(coll)
			_ = b.Set(collectionKey(coll.ID), encodeCollection(coll), nil)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return nil, fmt.Errorf("store: catalog commit: %w", err)
	}
	for id, coll := range old.byID {
		if e.s.byID[id] == nil {
			dropped = append(dropped, coll)
		}
	}
	c.mu.nextColl = max(next, c.mu.nextColl)
	c.state.Store(e.s)
	c.mu.shared.advance(rev)
	return dropped, nil
}

// Revision returns the log revision the state reflects (0 when the catalog is not shared).
func (c *Catalog) Revision() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.shared == nil {
		return 0
	}
	return c.mu.shared.rev
}

// ApplyShared applies a change another node committed at revision rev (ops in commit order)
// and returns the collections it dropped, whose local data the caller deletes. Changes must
// arrive in revision order; one at or below the state's revision (this node's own commits
// among them) is skipped.
func (c *Catalog) ApplyShared(rev int64, ops []CatalogOp) (dropped []*Collection, err error) {
	c.hold.wait(rev)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.mu.shared
	if s == nil {
		return nil, fmt.Errorf("%w: the catalog is not shared", ErrInvalid)
	}
	if rev <= s.rev {
		return nil, nil
	}
	old := c.state.Load()
	e := newEdit(old)
	next, err := applyOps(e, ops, c.mu.nextColl)
	if err != nil {
		return nil, fmt.Errorf("store: the shared catalog at revision %d: %w", rev, err)
	}
	b := c.db.pdb.NewBatch()
	defer func() { _ = b.Close() }()
	for _, op := range ops {
		if op.Value == nil {
			_ = b.Delete(op.Key, nil)
		} else {
			_ = b.Set(op.Key, op.Value, nil)
		}
	}
	// Not synced: the log is the truth, and Share rewrites the mirror at the next start.
	if err := b.Commit(pebble.NoSync); err != nil {
		return nil, fmt.Errorf("store: catalog commit: %w", err)
	}
	for id, coll := range old.byID {
		if e.s.byID[id] == nil {
			dropped = append(dropped, coll)
		}
	}
	c.mu.nextColl = next
	c.state.Store(e.s)
	s.advance(rev)
	return dropped, nil
}

// advance records that the state reflects revision rev and wakes the waiters.
func (s *sharedCatalog) advance(rev int64) {
	s.rev = rev
	close(s.advanced)
	s.advanced = make(chan struct{})
}

// applyOps applies ops to e and returns the next collection ID to assign: at least next,
// the counter's value if ops set it, and above every collection ops put.
func applyOps(e *edit, ops []CatalogOp, next CollID) (CollID, error) {
	for _, op := range ops {
		if bytes.Equal(op.Key, nextCollKey) {
			if len(op.Value) != 8 {
				return 0, fmt.Errorf("%w: counter %q has %d bytes", ErrCorrupt, op.Key, len(op.Value))
			}
			next = max(next, CollID(binary.BigEndian.Uint64(op.Value)))
			continue
		}
		if len(op.Key) < 2 || op.Key[0] != prefixCatalog {
			return 0, errCorruptKey(op.Key)
		}
		id, err := applyRecord(e, op.Key, op.Value)
		if err != nil {
			return 0, err
		}
		next = max(next, id+1)
	}
	return max(next, 1), nil
}

// NodeLocalDB reports whether the records of database db stay on each node rather than being
// shared: config, whose collections each node derives from the shared catalog itself (the
// partition manager rewrites config.chunks and the others), and local, as in MongoDB.
func NodeLocalDB(db string) bool { return db == "config" || db == "local" }

// nodeLocal reports whether catalog record k belongs to a node-local database, judged by the
// states before (old) and after (cur) the change.
func nodeLocal(k []byte, old, cur *CatalogState) bool {
	switch {
	case len(k) > 2 && k[0] == prefixCatalog && k[1] == catalogDatabase:
		return NodeLocalDB(string(k[2:]))
	case len(k) == 6 && k[0] == prefixCatalog && k[1] == catalogCollection:
		id := CollID(binary.BigEndian.Uint32(k[2:]))
		if coll := cur.byID[id]; coll != nil {
			return NodeLocalDB(coll.DB)
		}
		if coll := old.byID[id]; coll != nil {
			return NodeLocalDB(coll.DB)
		}
	}
	return false
}

// commitShared commits batch b, the catalog change from the published state to cur, to the
// shared log (without the records of node-local databases); the caller holds c.mu and then
// commits b locally.
func (c *Catalog) commitShared(b *pebble.Batch, cur *CatalogState, guards []Guard) error {
	old := c.state.Load()
	var ops []CatalogOp
	r := b.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			return fmt.Errorf("store: reading a catalog batch: %w", err)
		}
		if !ok {
			break
		}
		if nodeLocal(k, old, cur) {
			continue
		}
		switch kind { //nolint:exhaustive // the catalog writes sets and deletes only
		case pebble.InternalKeyKindSet:
			ops = append(ops, CatalogOp{Key: bytes.Clone(k), Value: bytes.Clone(v)})
		case pebble.InternalKeyKindDelete:
			ops = append(ops, CatalogOp{Key: bytes.Clone(k)})
		default:
			return fmt.Errorf("store: a catalog batch holds an operation of kind %v", kind)
		}
	}
	if len(ops) == 0 {
		return nil
	}
	s := c.mu.shared
	rev, err := s.log.Commit(s.rev, ops, guards)
	if err != nil {
		return err
	}
	s.advance(rev)
	return nil
}

// maxFenceTries bounds Fence's attempts, each after another node's change.
const maxFenceTries = 16

// Fence settles a change whose commit failed without saying whether it committed (a lost
// reply from the shared log): on return without error, the state reflects every change the
// log committed, and no change computed from a revision this catalog had reached can commit
// any more. It commits an empty change conditioned on the catalog's revision, which moves
// the revision on (a pending change conditioned on an earlier one is refused from then on),
// and on a conflict waits until the state reflects the newer revision and tries again. A
// catalog that is not shared has nothing to settle.
func (c *Catalog) Fence(ctx context.Context) error {
	for range maxFenceTries {
		c.mu.Lock()
		s := c.mu.shared
		if s == nil {
			c.mu.Unlock()
			return nil
		}
		rev, err := s.log.Commit(s.rev, nil, nil)
		if err == nil {
			s.advance(rev)
		}
		c.mu.Unlock()
		var conflict *ConflictError
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &conflict):
			return err
		}
		if err := c.waitRevision(ctx, conflict.Rev); err != nil {
			return err
		}
	}
	return fmt.Errorf("store: the shared catalog kept changing: %d fences conflicted", maxFenceTries)
}

// waitRevision waits until the state reflects revision rev (or a later one), at most
// revisionWait or until ctx ends.
func (c *Catalog) waitRevision(ctx context.Context, rev int64) error {
	deadline := time.NewTimer(revisionWait)
	defer deadline.Stop()
	if c.Revision() >= rev {
		return nil
	}
	c.hold.need(rev)
	for {
		c.mu.Lock()
		s := c.mu.shared
		if s == nil || s.rev >= rev {
			c.mu.Unlock()
			return nil
		}
		ch := s.advanced
		c.mu.Unlock()
		var err error
		select {
		case <-ch:
			continue
		case <-deadline.C:
			err = fmt.Errorf("%w: at revision %d, waiting for %d", ErrCatalogBehind, c.Revision(), rev)
		case <-ctx.Done():
			err = fmt.Errorf("%w: at revision %d, waiting for %d: %w", ErrCatalogBehind, c.Revision(), rev, ctx.Err())
		}
		c.hold.gaveUp()
		return err
	}
}

// SetHomeShard makes shard s hold the one partition of the collections created from now on
// without partitions of their own (unsharded ones): in a cluster, the creating node's first
// shard rather than shard 0, which may be another node's.
func (c *Catalog) SetHomeShard(s int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.homeShard = s
}

// SetHomePicker makes pick choose the shard of the one partition of each collection created
// from now on without partitions (in is the record asked for); a negative answer keeps the
// home shard (SetHomeShard). pick runs under the catalog's mutex: it may read State, never
// change the catalog.
func (c *Catalog) SetHomePicker(pick func(in *Collection) int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.pickHome = pick
}

// CatchUp waits until the state reflects every change the log had committed when it was
// called, and reports whether the state advanced meanwhile; a catalog that is not shared has
// nothing to catch up with. It costs a read of the log, so callers use it where the local
// state may lag behind what a client has already seen: a command naming a collection this
// node does not hold (another node may have just created it), a DDL change.
func (c *Catalog) CatchUp(ctx context.Context) (advanced bool, err error) {
	rev, err := c.LogRevision(ctx)
	if err != nil || rev <= c.Revision() {
		return false, err
	}
	return true, c.waitRevision(ctx, rev)
}

// LogRevision reads the revision the shared log has reached (0 for a catalog that is not
// shared): CatchUp's read of the log, for a caller that bounds it apart from the wait for
// the state to get there (WaitRevision).
func (c *Catalog) LogRevision(ctx context.Context) (int64, error) {
	c.mu.Lock()
	s := c.mu.shared
	c.mu.Unlock()
	if s == nil {
		return 0, nil
	}
	return s.log.Revision(ctx)
}

// Shared reports whether the catalog is shared with other nodes (cluster mode).
func (c *Catalog) Shared() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.shared != nil
}

// WaitRevision waits until the state reflects revision rev or a later one (at most
// revisionWait or until ctx ends; then ErrCatalogBehind): a node that another node's request
// names a newer revision catches up before answering it, and a router that an owner told
// it is stale before planning again.
func (c *Catalog) WaitRevision(ctx context.Context, rev int64) error { return c.waitRevision(ctx, rev) }

// A held shared catalog is one whose watch lags on purpose (a test failpoint: exec's
// pauseCatalogWatch): ApplyShared blocks on the changes of other nodes until something on
// this node waits for them (WaitRevision, a conflicted commit), and then lets through only
// the changes up to the revision waited for. That is the deterministic form of a slow watch:
// the node routes on an old map until the owner of a shard tells it so (StaleConfig), and
// catches up exactly when it asks to.

// holdMax bounds how long a held change waits: a held watch never blocks a node for good.
const holdMax = time.Minute

// catalogHold is the state of a held catalog.
type catalogHold struct {
	mu      sync.Mutex
	on      bool
	strict  bool          // held even from what waits for them (until off, or holdMax)
	want    int64         // the highest revision something waited for while held
	changed chan struct{} // closed when on or want changes; nil until someone waits
	// waits counts the waits for a held revision since the hold began; expired, those that gave up.
	waits, expired int64
}

// HoldShared holds back (on) or lets through (off) the changes other nodes commit to the
// shared catalog; see catalogHold.
func (c *Catalog) HoldShared(on bool) { c.HoldSharedStrictly(on, false) }

// HoldSharedStrictly is HoldShared; strict holds the changes from what waits for them too.
func (c *Catalog) HoldSharedStrictly(on, strict bool) {
	h := &c.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	if on && !h.on {
		h.waits, h.expired = 0, 0
	}
	h.on, h.strict, h.want = on, on && strict, 0
	h.signal()
}

// HoldStats returns the waits for a held revision since the hold began, and those that gave up.
func (c *Catalog) HoldStats() (waits, expired int64) {
	h := &c.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waits, h.expired
}

// signal wakes the held changes; the caller holds h.mu.
func (h *catalogHold) signal() {
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
}

// need records that revision rev is waited for (counted while held): the held changes up to
// it may apply, unless the hold is strict.
func (h *catalogHold) need(rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.on {
		return
	}
	h.waits++
	if !h.strict && rev > h.want {
		h.want = rev
		h.signal()
	}
}

// gaveUp records that a wait gave up before its revision came (counted while held).
func (h *catalogHold) gaveUp() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.on {
		h.expired++
	}
}

// wait blocks the change at revision rev while the catalog is held and nothing waits for it
// (at most holdMax).
func (h *catalogHold) wait(rev int64) {
	var deadline <-chan time.Time
	for {
		h.mu.Lock()
		if !h.on || rev <= h.want {
			h.mu.Unlock()
			return
		}
		if h.changed == nil {
			h.changed = make(chan struct{})
		}
		ch := h.changed
		h.mu.Unlock()
		if deadline == nil {
			t := time.NewTimer(holdMax)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}
