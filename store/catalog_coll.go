package store

import (
	"encoding/binary"
	"fmt"
)

// CreateCollection adds collection in.DB.in.Name (ErrExists if it exists), creating its
// database implicitly, and returns the stored record. From in it takes DB, Name, Options,
// ShardKey, Throughput, CreatedAt (now if zero), Indexes and Partitions; it assigns the ID
// (from a persistent counter: IDs are never reused, even after a drop and a restart), a random
// UUID and Version 1. The _id index (ID 1, "_id_", {_id: 1}) is added unless in.Indexes has
// one (which gets ID 1 if it has none); other indexes and partitions with ID 0 get fresh IDs;
// no partitions means one partition [0, 2^64) on the home shard (SetHomeShard; shard 0 unless
// set), or the one SetHomePicker's function picks.
func (c *Catalog) CreateCollection(in Collection) (*Collection, error) {
	var out *Collection
	err := c.mutate(func(m *mutation) error {
		if in.DB == "" || in.Name == "" {
			return fmt.Errorf("%w: empty database or collection name", ErrInvalid)
		}
		if m.e.s.Collection(in.DB, in.Name) != nil {
			return fmt.Errorf("%w: collection %s.%s", ErrExists, in.DB, in.Name)
		}
		if in.ReshardOf != "" { // one layout change of a collection at a time, cluster-wide
			for _, o := range m.e.s.Collections(in.DB) {
				if o.ReshardOf == in.ReshardOf {
					return fmt.Errorf("%w: %s.%s is already the copy of a layout change of %s.%s", ErrReshardRunning, in.DB, o.Name, in.DB, in.ReshardOf)
				}
			}
		}
		if c.mu.nextColl == 0 {
			return fmt.Errorf("%w: collection IDs exhausted", ErrInvalid) // 2^32 creations
		}
		home := c.mu.homeShard
		if c.mu.pickHome != nil && len(in.Partitions) == 0 {
			if s := c.mu.pickHome(&in); s >= 0 {
				home = s
			}
		}
		coll := newCollectionRecord(&in, c.mu.nextColl, home)
		// Advance even if the commit fails: skipping an ID is harmless, reusing one is not.
		c.mu.nextColl++
		if err := m.putCollection(coll); err != nil {
			return err
		}
		m.ensureDatabase(coll.DB)
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], uint64(coll.ID)+1)
		_ = m.b.Set(nextCollKey, buf[:], nil)
		out = coll
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// newCollectionRecord builds the record CreateCollection stores for in, with ID id.
func newCollectionRecord(in *Collection, id CollID, home int) *Collection {
	coll := in.clone()
	coll.ID = id
	coll.UUID = newUUID()
	coll.Version = 1
	if coll.CreatedAt.IsZero() {
		coll.CreatedAt = now()
	}
	if x := coll.Index(IDIndexName); x == nil {
		idx := Index{ID: IDIndexID, Name: IDIndexName, Key: cloneDoc(idIndexKey), Ready: true}
		coll.Indexes = append([]Index{idx}, coll.Indexes...)
	} else if x.ID == 0 {
		x.ID = IDIndexID // a given _id index (say, with a collation) still gets the _id index's ID
	}
	coll.NextIndexID = max(coll.NextIndexID, IDIndexID+1)
	for _, x := range coll.Indexes {
		coll.NextIndexID = max(coll.NextIndexID, x.ID+1)
	}
	for i := range coll.Indexes {
		if coll.Indexes[i].ID == 0 {
			coll.Indexes[i].ID = coll.NextIndexID
			coll.NextIndexID++
		}
	}
	if len(coll.Partitions) == 0 {
		coll.Partitions = []Partition{{Shard: home}}
	}
	coll.NextPartitionID = max(coll.NextPartitionID, 1)
	for _, p := range coll.Partitions {
		coll.NextPartitionID = max(coll.NextPartitionID, p.ID+1)
	}
	for i := range coll.Partitions {
		if coll.Partitions[i].ID == 0 {
			coll.Partitions[i].ID = coll.NextPartitionID
			coll.NextPartitionID++
		}
	}
	return coll
}

// DropCollection removes collection db.name from the catalog (ErrNotFound if missing) and
// returns its record; the caller deletes its data on every shard (DB.DeleteCollectionData),
// and OrphanCollections finds it again if a crash comes first.
func (c *Catalog) DropCollection(db, name string) (*Collection, error) {
	var out *Collection
	err := c.mutate(func(m *mutation) error {
		out = m.e.s.Collection(db, name)
		if out == nil {
			return fmt.Errorf("%w: collection %s.%s", ErrNotFound, db, name)
		}
		m.removeCollection(out)
		return nil
	})
	return out, err
}

// RenameCollection renames db.from to toDB.to, creating toDB implicitly; only metadata
// changes, since data is keyed by collection ID. If the target exists, it fails with ErrExists
// unless dropTarget, in which case the target is dropped in the same change and returned as
// dropped (the caller deletes its data). The source missing is ErrNotFound; renaming a
// collection onto itself is ErrInvalid.
func (c *Catalog) RenameCollection(db, from, toDB, to string, dropTarget bool) (renamed, dropped *Collection, err error) {
	return c.RenameCollectionGuarded(db, from, toDB, to, dropTarget, nil)
}

// RenameCollectionGuarded is RenameCollection whose change a shared catalog commits only
// while every guard holds (ErrIncarnation otherwise): a layout change's commit, which must
// not rename its copy over the source once its coordinator lost its registration.
func (c *Catalog) RenameCollectionGuarded(db, from, toDB, to string, dropTarget bool, guards []Guard) (renamed, dropped *Collection, err error) {
	err = c.mutate(func(m *mutation) error {
		m.guards = guards
		src := m.e.s.Collection(db, from)
		if src == nil {
			return fmt.Errorf("%w: collection %s.%s", ErrNotFound, db, from)
		}
		if db == toDB && from == to {
			return fmt.Errorf("%w: cannot rename %s.%s onto itself", ErrInvalid, db, from)
		}
		if dst := m.e.s.Collection(toDB, to); dst != nil {
			if !dropTarget {
				return fmt.Errorf("%w: collection %s.%s", ErrExists, toDB, to)
			}
			m.removeCollection(dst)
			dropped = dst
		}
		m.e.removeCollection(src)
		n := src.clone()
		n.DB, n.Name = toDB, to
		n.ReshardNode, n.ReshardOf = "", "" // a layout change's copy renamed over its source
		n.Version++
		if err := m.putCollection(n); err != nil {
			return err
		}
		m.ensureDatabase(toDB)
		renamed = n
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return renamed, dropped, nil
}

// UpdateCollection changes collection db.name: fn gets a deep copy to modify, its error
// aborts the change, and the result must keep the record's invariants (ErrInvalid otherwise)
// and its identity (ID, DB, Name, UUID; renames go through RenameCollection). Version is bumped
// automatically. It is the one mutation the index and shard layers use (create/drop index,
// split, move, throughput).
func (c *Catalog) UpdateCollection(db, name string, fn func(*Collection) error) (*Collection, error) {
	return c.UpdateCollectionGuarded(db, name, nil, fn)
}

// UpdateCollectionGuarded is UpdateCollection whose change a shared catalog commits only
// while every guard holds (ErrIncarnation otherwise).
func (c *Catalog) UpdateCollectionGuarded(db, name string, guards []Guard, fn func(*Collection) error) (*Collection, error) {
	var out *Collection
	err := c.mutate(func(m *mutation) error {
		m.guards = guards
		old := m.e.s.Collection(db, name)
		if old == nil {
			return fmt.Errorf("%w: collection %s.%s", ErrNotFound, db, name)
		}
		n := old.clone()
		if err := fn(n); err != nil {
			return err
		}
		if n.ID != old.ID || n.DB != old.DB || n.Name != old.Name || n.UUID != old.UUID {
			return fmt.Errorf("%w: UpdateCollection cannot change the identity of %s.%s", ErrInvalid, db, name)
		}
		n.Version = old.Version + 1
		if err := m.putCollection(n); err != nil {
			return err
		}
		out = n
		return nil
	})
	return out, err
}
