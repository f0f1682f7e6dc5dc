package store

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Catalog keys (in the catalog's DB, shard 0):
//
//	'c' 'D' | name            → Database record (BSON)
//	'c' 'C' | coll u32 BE     → Collection record (BSON); keyed by ID, so a rename rewrites
//	                            one record and never touches data
//	'c' 'S' kind | db 0 name  → security record: a user or role (catalog_security.go)
//	'm' 'n' "coll"            → next collection ID, uint64 BE (never decreases)
const (
	catalogDatabase   byte = 'D'
	catalogCollection byte = 'C'
)

// nextCollKey is the key of the persistent collection-ID counter.
var nextCollKey = []byte{prefixMeta, metaCounter, 'c', 'o', 'l', 'l'}

// Catalog holds the databases and collections of a node. Reads go through State, a lock-free
// immutable snapshot; mutations serialize on a mutex, write one synced Pebble batch, then
// publish a new state (copy-on-write), so a reader never sees a change that is not durable.
type Catalog struct {
	db    *DB
	state atomic.Pointer[CatalogState]
	hold  catalogHold // catalog_shared.go
	mu    struct {
		sync.Mutex
		nextColl CollID // next collection ID to assign
		// shared is set when the catalog is shared by several nodes (catalog_shared.go).
		shared *sharedCatalog
		// homeShard holds the one partition of a collection created without any, unless
		// pickHome (SetHomePicker) names another.
		homeShard int
		pickHome  func(in *Collection) int
	}
}

// OpenCatalog loads the catalog records of db into memory. Open one Catalog per DB: two would
// each believe they own the records.
func OpenCatalog(db *DB) (*Catalog, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	c := &Catalog{db: db}
	e := newEdit(emptyState())
	maxID, err := loadCatalog(db.pdb, e)
	if err != nil {
		return nil, fmt.Errorf("store: loading catalog of %s: %w", db.dir, err)
	}
	next, err := readCounter(db.pdb, nextCollKey)
	if err != nil {
		return nil, fmt.Errorf("store: loading catalog of %s: %w", db.dir, err)
	}
	c.mu.nextColl = CollID(max(next, uint64(maxID)+1, 1))
	c.state.Store(e.s)
	return c, nil
}

// loadCatalog reads every catalog record into e and returns the highest collection ID.
func loadCatalog(pdb *pebble.DB, e *edit) (CollID, error) {
	it, err := pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixCatalog}, UpperBound: []byte{prefixCatalog + 1}})
	if err != nil {
		return 0, err
	}
	var maxID CollID
	for valid := it.First(); valid && err == nil; valid = it.Next() {
		var v []byte
		if v, err = it.ValueAndErr(); err != nil {
			break
		}
		var id CollID
		id, err = applyRecord(e, it.Key(), v)
		maxID = max(maxID, id)
	}
	if err == nil {
		err = it.Error()
	}
	return maxID, errors.Join(err, it.Close())
}

// applyRecord puts catalog record k = v into e, or removes it when v is nil, and returns the
// ID of the collection it put (0 for any other record). v is copied where kept.
func applyRecord(e *edit, k, v []byte) (CollID, error) {
	switch {
	case len(k) > 2 && k[1] == catalogDatabase:
		if v == nil {
			e.removeDatabase(string(k[2:]))
			return 0, nil
		}
		d, err := decodeDatabase(v)
		if err == nil {
			e.putDatabase(d)
		}
		return 0, err
	case len(k) == 6 && k[1] == catalogCollection:
		if v == nil {
			if c := e.s.byID[CollID(binary.BigEndian.Uint32(k[2:]))]; c != nil {
				e.removeCollection(c)
			}
			return 0, nil
		}
		c, err := decodeCollection(v)
		if err != nil {
			return 0, err
		}
		if old := e.s.byID[c.ID]; old != nil && (old.DB != c.DB || old.Name != c.Name) {
			e.removeCollection(old) // renamed
		}
		e.putCollection(c)
		return c.ID, nil
	case len(k) > 3 && k[1] == catalogSecurity:
		id, ok := decodeSecurityKey(k)
		if !ok {
			return 0, errCorruptKey(k)
		}
		e.cloneSecurity()
		if v == nil {
			delete(e.s.security, id)
		} else {
			e.s.security[id] = cloneDoc(v)
		}
		return 0, nil
	default:
		return 0, errCorruptKey(k)
	}
}

// readCounter reads a uint64 counter, 0 if absent.
func readCounter(pdb *pebble.DB, key []byte) (uint64, error) {
	v, closer, err := pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, errors.Join(fmt.Errorf("%w: counter %q has %d bytes", ErrCorrupt, key, len(v)), closer.Close())
	}
	n := binary.BigEndian.Uint64(v) // before Close, which ends v's validity
	return n, closer.Close()
}

// State returns the current catalog snapshot. It never blocks.
func (c *Catalog) State() *CatalogState { return c.state.Load() }

// databaseKey returns the key of a database record.
func databaseKey(name string) []byte {
	return append([]byte{prefixCatalog, catalogDatabase}, name...)
}

// collectionKey returns the key of a collection record.
func collectionKey(id CollID) []byte {
	return binary.BigEndian.AppendUint32([]byte{prefixCatalog, catalogCollection}, uint32(id))
}

// mutation is one catalog change being prepared under the mutex: the Pebble batch that makes
// it durable and the edit that publishes it.
type mutation struct {
	b *pebble.Batch
	e *edit
	// guards condition a shared catalog's commit (SharedLog.Commit); ignored by a local one.
	guards []Guard
}

// mutate runs fn under the catalog mutex on a fresh mutation, then commits the batch with a
// WAL sync and publishes the new state. An error from fn aborts everything. A shared catalog
// (catalog_shared.go) first commits the change to the shared log, conditioned on the revision
// the state was at; when another node committed first, fn runs again on the state that
// includes that change.
func (c *Catalog) mutate(fn func(m *mutation) error) error {
	for attempt := 0; ; attempt++ {
		err := c.mutateOnce(fn)
		var conflict *ConflictError
		if !errors.As(err, &conflict) || attempt == maxConflictRetries {
			return err
		}
		if err := c.waitRevision(context.Background(), conflict.Rev); err != nil {
			return err
		}
	}
}

// mutateOnce is one attempt of mutate.
func (c *Catalog) mutateOnce(fn func(m *mutation) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.db.closed.Load() {
		return ErrClosed
	}
	m := &mutation{b: c.db.pdb.NewBatch(), e: newEdit(c.state.Load())}
	// NB: pebble's Batch.Close fails only on a second Close, which this defer cannot be.
	defer func() { _ = m.b.Close() }()
	if err := fn(m); err != nil {
		return err
	}
	if c.mu.shared != nil && !m.b.Empty() {
		if err := c.commitShared(m.b, m.e.s, m.guards); err != nil {
			return err
		}
	}
	// Through the DB's guarded commit: a failed DB refuses it, and a WAL error fails the DB
	// instead of stopping the process ("pebble: fatal commit error"). Catalog records are
	// small and deletions free space: the disk reserve does not apply.
	err := c.db.writeRefused(false)
	if err == nil {
		if err = c.db.applyPebble(m.b, true); err == nil {
			if err = m.b.SyncWait(); err != nil {
				err = c.db.failCommit(err)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("store: catalog commit: %w", err)
	}
	c.state.Store(m.e.s)
	return nil
}

// putDatabase writes and publishes a database record.
func (m *mutation) putDatabase(d *Database) {
	_ = m.b.Set(databaseKey(d.Name), encodeDatabase(d), nil)
	m.e.putDatabase(d)
}

// putCollection writes and publishes a collection record after checking its invariants.
func (m *mutation) putCollection(c *Collection) error {
	if err := c.validate(); err != nil {
		return err
	}
	_ = m.b.Set(collectionKey(c.ID), encodeCollection(c), nil)
	m.e.putCollection(c)
	return nil
}

// removeCollection deletes and unpublishes a collection record.
func (m *mutation) removeCollection(c *Collection) {
	_ = m.b.Delete(collectionKey(c.ID), nil)
	m.e.removeCollection(c)
}

// ensureDatabase creates database name if it does not exist (implicit creation).
func (m *mutation) ensureDatabase(name string) {
	if m.e.s.dbs[name] == nil {
		m.putDatabase(&Database{Name: name})
	}
}

// CreateDatabase creates a database (ErrExists if it exists). opts may be nil.
func (c *Catalog) CreateDatabase(name string, opts bsoncore.Document) error {
	if name == "" {
		return fmt.Errorf("%w: empty database name", ErrInvalid)
	}
	return c.mutate(func(m *mutation) error {
		if m.e.s.dbs[name] != nil {
			return fmt.Errorf("%w: database %s", ErrExists, name)
		}
		m.putDatabase(&Database{Name: name, Options: cloneDoc(opts)})
		return nil
	})
}

// UpdateDatabase changes a database record: fn gets a copy and its error aborts the change.
// The name cannot change.
func (c *Catalog) UpdateDatabase(name string, fn func(*Database) error) (*Database, error) {
	var out *Database
	err := c.mutate(func(m *mutation) error {
		old := m.e.s.dbs[name]
		if old == nil {
			return fmt.Errorf("%w: database %s", ErrNotFound, name)
		}
		d := &Database{Name: old.Name, Options: cloneDoc(old.Options)}
		if err := fn(d); err != nil {
			return err
		}
		if d.Name != name {
			return fmt.Errorf("%w: UpdateDatabase cannot rename %s", ErrInvalid, name)
		}
		m.putDatabase(d)
		out = d
		return nil
	})
	return out, err
}

// DropDatabase removes a database and all its collections from the catalog (ErrNotFound if
// it does not exist) and returns the dropped collections, whose data the caller must delete on
// every shard (DB.DeleteCollectionData).
func (c *Catalog) DropDatabase(name string) ([]*Collection, error) {
	var dropped []*Collection
	err := c.mutate(func(m *mutation) error {
		if m.e.s.dbs[name] == nil {
			return fmt.Errorf("%w: database %s", ErrNotFound, name)
		}
		dropped = m.e.s.Collections(name)
		for _, coll := range dropped {
			m.removeCollection(coll)
		}
		_ = m.b.Delete(databaseKey(name), nil)
		m.e.removeDatabase(name)
		return nil
	})
	return dropped, err
}

// newUUID returns a random (version 4) UUID.
func newUUID() [16]byte {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails (Go 1.24+)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// now is the clock of CreatedAt, truncated to what BSON dates keep.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
