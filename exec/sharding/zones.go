package sharding

import (
	"errors"
	"slices"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Zones (sh.addShardToZone, sh.updateZoneKeyRange). Two records hold them, both in the
// catalog so that they are durable and change atomically with what they describe: the zones
// of each shard in the options of the config database's record (shardZones: {"shard-0":
// ["EU"]}), which config.shards shows as each shard's tags; and each collection's zone
// ranges in its record (store.Collection.Zones: {_id, min, max, tag}), which config.tags
// shows with their namespace. The manager turns a collection's ranges into positions
// (zoneSpans) for the policy, which splits at their bounds and moves their partitions to
// their zones' shards (shard/zone.go). In a cluster the config database is each node's own,
// so a shard's zones live in its placement record in etcd instead (Cluster.ShardZones,
// beside its draining mark); the collections' ranges are in the shared catalog already. Each
// node's manager splits its own partitions at the ranges' bounds and the elected one moves
// them into their zones, as for any split and move (cluster_view.go).

// shardZonesKey is the field of the config database's options that holds the shards' zones.
const shardZonesKey = "shardZones"

// ErrZoneInUse refuses to take a zone from the last shard that has it while a range uses it.
var ErrZoneInUse = errors.New("cannot remove a shard from zone if a chunk range is associated with it")

// ShardZones returns the zones of each shard by shard id, a shard ever given a zone listed
// even when it has none left (config.shards keeps its empty tags).
func (m *Manager) ShardZones() map[int][]string {
	if c := m.mopts.Cluster; c != nil {
		return c.ShardZones()
	}
	d := m.cat.Store().State().Database("config")
	if d == nil || d.Options == nil {
		return nil
	}
	doc, ok := d.Options.Lookup(shardZonesKey).DocumentOK()
	if !ok {
		return nil
	}
	out := map[int][]string{}
	elems, _ := doc.Elements()
	for _, el := range elems {
		s := m.shardID(el.Key())
		if s < 0 {
			continue
		}
		arr, _ := el.Value().ArrayOK()
		vals, _ := arr.Values()
		zones := []string{}
		for _, v := range vals {
			if z, ok := v.StringValueOK(); ok {
				zones = append(zones, z)
			}
		}
		out[s] = zones
	}
	return out
}

// shardID returns the id of the shard named name, or -1.
func (m *Manager) shardID(name string) int {
	for i := range m.cat.Shards() {
		if catalog.ShardName(i) == name {
			return i
		}
	}
	return -1
}

// ZoneExists reports whether some shard has zone.
func (m *Manager) ZoneExists(zone string) bool {
	for _, zs := range m.ShardZones() {
		if slices.Contains(zs, zone) {
			return true
		}
	}
	return false
}

// SetShardZone adds zone to shard s's zones (add) or takes it away. Taking it from the last
// shard that has it fails with ErrZoneInUse while a collection's range uses it.
func (m *Manager) SetShardZone(s int, zone string, add bool) error {
	if c := m.mopts.Cluster; c != nil {
		return m.setClusterShardZone(c, s, zone, add)
	}
	cat := m.cat.Store()
	if err := cat.CreateDatabase("config", nil); err != nil && !errors.Is(err, store.ErrExists) {
		return err
	}
	_, err := cat.UpdateDatabase("config", func(d *store.Database) error {
		zones := m.ShardZones()
		if zones == nil {
			zones = map[int][]string{}
		}
		has := slices.Contains(zones[s], zone)
		switch {
		case add && !has:
			zones[s] = append(zones[s], zone)
		case !add && has:
			if m.lastOfZone(zones, s, zone) && m.zoneUsed(zone) {
				return ErrZoneInUse
			}
			zones[s] = slices.DeleteFunc(slices.Clone(zones[s]), func(z string) bool { return z == zone })
		case !add:
			return nil // MongoDB's $pull of an absent zone changes nothing
		}
		d.Options = withShardZones(d.Options, zones)
		return nil
	})
	if err == nil {
		m.syncZoneConfig()
	}
	return err
}

// setClusterShardZone is SetShardZone in a cluster: the zones are in shard s's placement
// record. NB: the check that a zone in use keeps a shard reads this node's view, then the
// change commits on the shard's record alone, so a range added through another node in
// between is not seen (MongoDB serializes both under its config server's zone lock).
func (m *Manager) setClusterShardZone(c Cluster, s int, zone string, add bool) error {
	zones := c.ShardZones()
	if !add && slices.Contains(zones[s], zone) && m.lastOfZone(zones, s, zone) && m.zoneUsed(zone) {
		return ErrZoneInUse
	}
	if err := c.SetShardZone(s, zone, add); err != nil {
		return mongoerr.Wrap(err, mongoerr.HostUnreachable, "cannot write the shard's zones to the cluster's metadata: %v", err)
	}
	m.syncZoneConfig()
	return nil
}

// lastOfZone reports whether shard s is the only shard with zone.
func (m *Manager) lastOfZone(zones map[int][]string, s int, zone string) bool {
	for o, zs := range zones {
		if o != s && slices.Contains(zs, zone) {
			return false
		}
	}
	return true
}

// zoneUsed reports whether a collection has a range of zone.
func (m *Manager) zoneUsed(zone string) bool {
	used := false
	m.forShardedColls(func(c *store.Collection) {
		for _, z := range c.Zones {
			if t, _ := z.Lookup("tag").StringValueOK(); t == zone {
				used = true
			}
		}
	})
	m.forPendingZones(func(_, _ string, z bsoncore.Document) {
		if t, _ := z.Lookup("tag").StringValueOK(); t == zone {
			used = true
		}
	})
	return used
}

// withShardZones returns options with its shardZones field set to zones (shards by name, in
// shard order).
func withShardZones(options bsoncore.Document, zones map[int][]string) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	if options != nil {
		elems, _ := options.Elements()
		for _, el := range elems {
			if el.Key() != shardZonesKey {
				b.AppendValue(el.Key(), el.Value())
			}
		}
	}
	ids := make([]int, 0, len(zones))
	for s := range zones {
		ids = append(ids, s)
	}
	sort.Ints(ids)
	zb := bsoncore.NewDocumentBuilder()
	for _, s := range ids {
		ab := bsoncore.NewArrayBuilder()
		for _, z := range zones[s] {
			ab.AppendString(z)
		}
		zb.AppendArray(catalog.ShardName(s), ab.Build())
	}
	return b.AppendDocument(shardZonesKey, zb.Build()).Build()
}

// syncZoneConfig rewrites the config collections that show zones.
func (m *Manager) syncZoneConfig() {
	for _, n := range []string{"shards", "tags"} {
		_ = m.SyncConfig(n) // the manager's round rewrites them again on failure
	}
}

// SetZones replaces the zone ranges of collection db.name with zones (sorted by min).
func (m *Manager) SetZones(db, name string, zones []bsoncore.Document) error {
	_, err := m.cat.Store().UpdateCollection(db, name, func(c *store.Collection) error {
		c.Zones = zones
		return nil
	})
	if err == nil {
		m.syncZoneConfig()
	}
	return err
}

// zoneSpans returns ci's zone ranges as positions, with the shards of each range's zone.
func (m *Manager) zoneSpans(ci *catalog.Coll) []shard.ZoneSpan {
	if len(ci.Meta.Zones) == 0 {
		return nil
	}
	zones := m.ShardZones()
	var out []shard.ZoneSpan
	for _, z := range ci.Meta.Zones {
		minDoc, _ := z.Lookup("min").DocumentOK()
		maxDoc, _ := z.Lookup("max").DocumentOK()
		tag, _ := z.Lookup("tag").StringValueOK()
		lo, loEnd := BoundPosition(ci, minDoc)
		hi, hiEnd := BoundPosition(ci, maxDoc)
		if hiEnd {
			hi = 0
		}
		if loEnd || (hi != 0 && hi <= lo) {
			continue // no position inside it (updateZoneKeyRange refuses such ranges)
		}
		span := shard.ZoneSpan{Lo: lo, Hi: hi}
		for s, zs := range zones {
			if slices.Contains(zs, tag) && !m.IsDraining(s) {
				span.Shards = append(span.Shards, s)
			}
		}
		slices.Sort(span.Shards)
		out = append(out, span)
	}
	slices.SortFunc(out, func(a, b shard.ZoneSpan) int {
		switch {
		case a.Lo < b.Lo:
			return -1
		case a.Lo > b.Lo:
			return 1
		}
		return 0
	})
	return out
}

// BoundPosition returns the position a chunk or zone bound of ci's shard key stands for: a
// ranged key's values (their range key), a hashed key's NumberLong hash; MinKey is the
// start of the space and MaxKey its end (end set).
func BoundPosition(ci *catalog.Coll, d bsoncore.Document) (h uint64, end bool) {
	if ci.Ranged {
		if v, _ := d.LookupErr(ci.ShardKey[0].Path); v.Type == bsoncore.TypeMaxKey {
			return 0, true
		}
		h, _ = ci.BoundHash(d)
		return h, false
	}
	v, _ := d.LookupErr(ci.ShardKey[ci.Hashed].Path)
	switch v.Type {
	case bsoncore.TypeMaxKey:
		return 0, true
	case bsoncore.TypeInt64:
		return shard.Int64ToHash(v.Int64()), false
	}
	return 0, false
}

// tagDocs returns config.tags' documents: every zone range of every sharded collection, and
// those of namespaces not sharded yet (zones_pending.go).
func (m *Manager) tagDocs() []bsoncore.Document {
	var out []bsoncore.Document
	m.forShardedColls(func(c *store.Collection) {
		for _, z := range c.Zones {
			out = append(out, tagDoc(c.DB+"."+c.Name, z))
		}
	})
	m.forPendingZones(func(db, coll string, z bsoncore.Document) { out = append(out, tagDoc(db+"."+coll, z)) })
	return out
}

// tagDoc returns the config.tags document of zone range z of namespace ns.
func tagDoc(ns string, z bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	b.AppendValue("_id", z.Lookup("_id"))
	b.AppendString("ns", ns)
	for _, k := range []string{"min", "max", "tag"} {
		b.AppendValue(k, z.Lookup(k))
	}
	return b.Build()
}

// appendTags appends shard s's tags to a config.shards document, when it has ever had zones.
func appendTags(b *bsoncore.DocumentBuilder, zones map[int][]string, s int) {
	zs, ok := zones[s]
	if !ok {
		return
	}
	ab := bsoncore.NewArrayBuilder()
	for _, z := range zs {
		ab.AppendString(z)
	}
	b.AppendArray("tags", ab.Build())
}

// ZoneDoc returns a zone range's record: {_id, min, max, tag}.
func ZoneDoc(minDoc, maxDoc bsoncore.Document, tag string) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendObjectID("_id", bsonx.NewObjectID()).
		AppendDocument("min", minDoc).AppendDocument("max", maxDoc).AppendString("tag", tag).Build()
}
