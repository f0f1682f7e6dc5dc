package sharding

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// Zone ranges of a namespace not sharded yet. MongoDB keeps them in config.tags whatever the
// namespace, and shardCollection then creates the first chunks along them. cleave keeps a
// sharded collection's ranges in its record (zones.go); those of a namespace not sharded yet
// wait in its database's record (options.pendingZones: {<coll>: [{_id, min, max, tag}]}), which
// is shared by every node in a cluster as the collections are. shardCollection moves them into
// the new collection's record; config.tags shows both.

// pendingZonesKey is the field of a database's options that holds its pending zone ranges.
const pendingZonesKey = "pendingZones"

// PendingZones returns the zone ranges of db.coll waiting for it to be sharded (bounds as
// given, sorted by min), nil when none.
func (m *Manager) PendingZones(db, coll string) []bsoncore.Document {
	d := m.cat.Store().State().Database(db)
	if d == nil || d.Options == nil {
		return nil
	}
	arr, ok := d.Options.Lookup(pendingZonesKey, coll).ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	var out []bsoncore.Document
	for _, v := range vals {
		if z, ok := v.DocumentOK(); ok {
			out = append(out, z)
		}
	}
	return out
}

// SetPendingZones replaces the pending zone ranges of db.coll with zones (none: removes
// them), creating the database's record when there is none.
func (m *Manager) SetPendingZones(db, coll string, zones []bsoncore.Document) error {
	cat := m.cat.Store()
	if cat.State().Database(db) == nil {
		if len(zones) == 0 {
			return nil
		}
		if err := cat.CreateDatabase(db, nil); err != nil && !errors.Is(err, store.ErrExists) {
			return err
		}
	}
	_, err := cat.UpdateDatabase(db, func(d *store.Database) error {
		d.Options = withPendingZones(d.Options, coll, zones)
		return nil
	})
	if err == nil {
		m.syncZoneConfig()
	}
	return err
}

// withPendingZones returns options with coll's pending zone ranges set to zones.
func withPendingZones(options bsoncore.Document, coll string, zones []bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	var old bsoncore.Document
	if options != nil {
		elems, _ := options.Elements()
		for _, el := range elems {
			if el.Key() == pendingZonesKey {
				old, _ = el.Value().DocumentOK()
				continue
			}
			b.AppendValue(el.Key(), el.Value())
		}
	}
	pb := bsoncore.NewDocumentBuilder()
	n := 0
	if old != nil {
		elems, _ := old.Elements()
		for _, el := range elems {
			if el.Key() != coll {
				pb.AppendValue(el.Key(), el.Value())
				n++
			}
		}
	}
	if len(zones) > 0 {
		ab := bsoncore.NewArrayBuilder()
		for _, z := range zones {
			ab.AppendDocument(z)
		}
		pb.AppendArray(coll, ab.Build())
		n++
	}
	if n > 0 {
		b.AppendDocument(pendingZonesKey, pb.Build())
	}
	return b.Build()
}

// forPendingZones calls fn with every namespace's pending zone ranges, skipping a namespace
// sharded by now (a crash between shardCollection's two catalog changes leaves both; the
// collection's record wins).
func (m *Manager) forPendingZones(fn func(db, coll string, z bsoncore.Document)) {
	state := m.cat.Store().State()
	for _, d := range state.Databases() {
		if d.Options == nil {
			continue
		}
		pending, ok := d.Options.Lookup(pendingZonesKey).DocumentOK()
		if !ok {
			continue
		}
		elems, _ := pending.Elements()
		for _, el := range elems {
			if c := state.Collection(d.Name, el.Key()); c != nil && c.Sharded() {
				continue
			}
			arr, _ := el.Value().ArrayOK()
			vals, _ := arr.Values()
			for _, v := range vals {
				if z, ok := v.DocumentOK(); ok {
					fn(d.Name, el.Key(), z)
				}
			}
		}
	}
}

// ZonePartitions returns the first partitions of a new collection sharded on key whose zone
// ranges (full bounds) are zones: along the ranges, each on its zone's shards (all of them,
// the range cut evenly, with presplit), the holes between them over holes in turn
// (shard.ZoneLayout). Partition ids are left 0 for the catalog to assign.
func (m *Manager) ZonePartitions(key bsoncore.Document, zones []bsoncore.Document, holes []int, presplit bool) ([]store.Partition, error) {
	ci, err := catalog.Compile(&store.Collection{ShardKey: key, Zones: zones, Partitions: []store.Partition{{ID: 1}}})
	if err != nil {
		return nil, err
	}
	return StoreParts(shard.ZoneLayout(m.zoneSpans(ci), holes, presplit)), nil
}
