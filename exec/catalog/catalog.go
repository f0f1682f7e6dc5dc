package catalog

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/store"
)

// Catalog is the executor's view of its collections: the shards, the stored catalog, the
// compiled collections cached per catalog version, the key locks writers take and the DDL
// lock. It is the single owner of the DDL lock: catalog changes (create, drop, rename,
// index builds, collMod, sharding, partition moves) run one at a time under LockDDL.
type Catalog struct {
	// shards is indexed by shard id; in a cluster it grows as nodes join (SetShards).
	shards atomic.Pointer[[]Shard]
	store  *store.Catalog
	log    *zap.Logger
	cache  collCache
	locks  store.KeyLocks
	// ddl is the DDL lock: a one-slot semaphore, so that it can be waited for with a
	// deadline (LockDDLCtx) and released by another goroutine (a move's destination).
	ddl    chan struct{}
	capped cappedStates // capped.go
	// readers are the reads that yield (readers.go).
	readers Readers
	// creating, when set, is told of each collection ForWrite creates (OnCreate).
	creating func(db string) (created func(*store.Collection))
	// records orders the writes and merges of session transaction records (records.go).
	records RecordGate
}

// OnCreate makes ForWrite call fn with the database before it creates a collection
// implicitly, and the function fn returns after: with the collection once its catalog change
// committed, with nil when nothing was created. Change streams report the creation at a time
// taken before the change, so that the writes into the new collection sort after it. Set it
// before the catalog is used.
func (c *Catalog) OnCreate(fn func(db string) (created func(*store.Collection))) {
	c.creating = fn
}

// New returns the catalog over shards and the stored catalog st.
func New(shards []Shard, st *store.Catalog, log *zap.Logger) *Catalog {
	c := &Catalog{store: st, log: log, ddl: make(chan struct{}, 1)}
	c.shards.Store(&shards)
	return c
}

// Shards returns the shards, indexed by shard id. The slice is never modified: SetShards
// publishes a new one.
func (c *Catalog) Shards() []Shard { return *c.shards.Load() }

// SetShards replaces the shards: in a cluster, when the placement names shards this node did
// not know (a node joined), their stand-ins are added. Ids never change meaning, so the new
// slice extends the old one.
func (c *Catalog) SetShards(shards []Shard) { c.shards.Store(&shards) }

// Store returns the stored catalog.
func (c *Catalog) Store() *store.Catalog { return c.store }

// Locks returns the key locks writers hold from reading a document to committing it.
func (c *Catalog) Locks() *store.KeyLocks { return &c.locks }

// TxnRecords returns the gate the writes and merges of session transaction records pass.
func (c *Catalog) TxnRecords() *RecordGate { return &c.records }

// LockDDL takes the DDL lock and returns its release. An index build holds it from start
// to finish, as MongoDB's collection lock does.
func (c *Catalog) LockDDL() (unlock func()) {
	c.ddl <- struct{}{}
	return c.unlockDDL
}

// LockDDLCtx is LockDDL that gives up when ctx ends (its error then).
func (c *Catalog) LockDDLCtx(ctx context.Context) (unlock func(), err error) {
	select {
	case c.ddl <- struct{}{}:
		return c.unlockDDL, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// unlockDDL releases the DDL lock.
func (c *Catalog) unlockDDL() { <-c.ddl }

// Info returns the compiled form of catalog record m, building it on first use of this
// version.
func (c *Catalog) Info(m *store.Collection) (*Coll, error) { return c.cache.info(m) }

// Refresh returns the current compiled version of collection ci, or ci itself when it is
// current or no longer exists (a writer of a dropped collection writes orphan data, which
// the drop's cleanup or the next start removes). Writers call it once they hold their key
// locks, so that indexes created or dropped meanwhile are maintained or skipped.
func (c *Catalog) Refresh(ci *Coll) *Coll {
	m := c.store.State().CollectionByID(ci.Meta.ID)
	if m == nil || m == ci.Meta {
		return ci
	}
	fresh, err := c.cache.info(m)
	if err != nil {
		return ci
	}
	return fresh
}

// Replaced reports whether ci's collection was replaced by another of the same name: its
// ID is gone from the catalog and db.name names another collection (a layout change's
// rename, $out's). A write holding ci must plan again on the new one.
func (c *Catalog) Replaced(ci *Coll) bool {
	st := c.store.State()
	return !st.Live(ci.Meta.ID) && st.Collection(ci.Meta.DB, ci.Meta.Name) != nil
}

// Exists reports whether collection ci is still in the catalog under its name: not dropped,
// not replaced by a rename's dropTarget, not renamed.
func (c *Catalog) Exists(ci *Coll) bool {
	m := c.store.State().CollectionByID(ci.Meta.ID)
	return m != nil && m.DB == ci.Meta.DB && m.Name == ci.Meta.Name
}

// HoldWriters waits until no writer holds key locks and keeps others from taking any until
// release: a catalog change made in between is seen by every write that commits after it
// (writers refresh their collection under their locks), and no write that looked the
// catalog up before it commits after it. A drop or a rename reserves its change event's
// time and changes the catalog while it holds writers, so that the writes into the
// collection it drops sort before its event. It must not be held across Barrier.
func (c *Catalog) HoldWriters() (release func()) { return c.locks.LockAll() }

// Lookup returns the compiled collection db.name, or nil if it does not exist.
func (c *Catalog) Lookup(db, name string) (*Coll, error) {
	m := c.store.State().Collection(db, name)
	if m == nil {
		return nil, nil
	}
	return c.cache.info(m)
}

// ForWrite returns collection db.name, creating it as MongoDB does on a first insert.
func (c *Catalog) ForWrite(db, name string) (*Coll, error) {
	if ci, err := c.Lookup(db, name); ci != nil || err != nil {
		return ci, err
	}
	if err := ValidateCollName(db, name); err != nil {
		return nil, err
	}
	created := func(*store.Collection) {}
	if c.creating != nil {
		created = c.creating(db)
	}
	m, err := c.store.CreateCollection(store.Collection{DB: db, Name: name})
	if err != nil {
		created(nil)
	}
	if errors.Is(err, store.ErrExists) {
		return c.Lookup(db, name)
	}
	if err != nil {
		return nil, err
	}
	created(m)
	c.log.Info("created collection", zap.String("ns", db+"."+name))
	return c.cache.info(m)
}

// Barrier waits until every writer that holds key locks now has committed and released
// them. Writers refresh their collection under their locks, so after a catalog change and
// a barrier, every write still to come sees the change.
func (c *Catalog) Barrier() {
	unlock := c.locks.LockAll()
	unlock()
}

// DeleteData deletes the data of dropped collection m on every shard. A failure is logged,
// not returned: the catalog change is done, and the next start's orphan cleanup
// (store.OrphanCollections) finishes the job.
func (c *Catalog) DeleteData(m *store.Collection) {
	c.Barrier() // writers that still held m's old record finish first
	c.forgetCapped(m.ID)
	for i, db := range c.Shards() {
		if err := db.DeleteCollectionData(m.ID); err != nil {
			c.log.Warn("cannot delete the data of a dropped collection; the next start will",
				zap.String("ns", m.DB+"."+m.Name), zap.Int("shard", i), zap.Error(err))
		}
	}
}

// MarkMultikey records that index idx of collection coll is multikey on paths, synced,
// unless it already is. A writer calls it before committing the write that makes it so:
// a reader whose snapshot holds the write then finds the flag in the catalog (query checks
// the catalog again after taking its snapshots). It never takes the DDL lock, which an
// index build holds while it waits for writers.
func (c *Catalog) MarkMultikey(coll store.CollID, idx store.IndexID, paths []string) error {
	m := c.store.State().CollectionByID(coll)
	if m == nil {
		return nil // dropped meanwhile: its data is orphaned anyway
	}
	_, err := c.store.UpdateCollection(m.DB, m.Name, func(col *store.Collection) error {
		changed := false
		for i := range col.Indexes {
			x := &col.Indexes[i]
			if x.ID != idx {
				continue
			}
			for _, p := range paths {
				if !slices.Contains(x.MultikeyPaths, p) {
					x.MultikeyPaths = append(x.MultikeyPaths, p)
					changed = true
				}
			}
		}
		if !changed {
			return errUnchanged // already recorded, or an index outside the catalog
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

// errUnchanged aborts a catalog update that has nothing to change.
var errUnchanged = errors.New("catalog: nothing to change")
