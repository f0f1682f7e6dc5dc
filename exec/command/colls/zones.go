package colls

import (
	"context"
	"errors"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Zones, as MongoDB's config server keeps them (sharding_catalog_manager_zone_operations):
// addShardToZone and removeShardFromZone change a shard's tags, updateZoneKeyRange adds a
// range of shard-key values to a zone (or, with zone: null, removes it). The partition
// manager then places the range's partitions on the zone's shards (exec/sharding/zones.go).

// addZoneCommands registers the zone commands.
func (h *Handlers) addZoneCommands(add func(*command.Command)) {
	add(&command.Command{Name: "addShardToZone", Aliases: []string{"addshardtozone"}, Run: h.shardZone(true), Action: auth.ActionClusterAdmin, Help: "add a shard to a zone", AdminOnly: true, Props: command.WriteConcern})
	add(&command.Command{Name: "removeShardFromZone", Aliases: []string{"removeshardfromzone"}, Run: h.shardZone(false), Action: auth.ActionClusterAdmin, Help: "remove a shard from a zone", AdminOnly: true, Props: command.WriteConcern})
	add(&command.Command{Name: "updateZoneKeyRange", Aliases: []string{"updatezonekeyrange"}, Run: h.updateZoneKeyRange, Action: auth.ActionClusterAdmin, Help: "assign a range of shard-key values to a zone, or remove it", AdminOnly: true, Props: command.WriteConcern})
}

// shardZone returns addShardToZone (add) or removeShardFromZone: {<cmd>: shard, zone}.
func (h *Handlers) shardZone(add bool) func(context.Context, *command.Request) error {
	return func(_ context.Context, r *command.Request) error {
		cmd := r.Name
		first, _ := bsonx.FirstElement(r.Body)
		name, err := args.String(cmd, cmd, first.Value())
		if err != nil {
			return err
		}
		zone, err := zoneArg(cmd, r.Body, false)
		if err != nil {
			return err
		}
		s := h.shardByName(name)
		if s < 0 {
			return mongoerr.New(mongoerr.ShardNotFound, "shard %s does not exist", name)
		}
		err = h.Shards.SetShardZone(s, *zone, add)
		if errors.Is(err, sharding.ErrZoneInUse) {
			return mongoerr.New(mongoerr.ZoneStillInUse, "%s", err.Error())
		}
		return catalog.StoreError(err)
	}
}

// zoneArg reads the zone field of body: a string, or null when nullable (the zone pointer
// is then nil).
func zoneArg(cmd string, body bsoncore.Document, nullable bool) (*string, error) {
	var zone *string
	seen := false
	err := args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		switch key {
		case "zone":
			seen = true
			if nullable && v.Type == bsoncore.TypeNull {
				return true, nil
			}
			s, err := args.String(cmd, key, v)
			zone = &s
			return true, err
		case "min", "max":
			return true, nil
		}
		return false, nil
	})
	if err == nil && !seen {
		err = args.Missing(cmd, "zone")
	}
	return zone, err
}

// updateZoneKeyRange runs {updateZoneKeyRange: ns, min, max, zone}: zone a string adds the
// range [min, max) to the zone; zone null removes the range.
func (h *Handlers) updateZoneKeyRange(_ context.Context, r *command.Request) error {
	const cmd = "updateZoneKeyRange"
	first, _ := bsonx.FirstElement(r.Body)
	ns, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	var minDoc, maxDoc bsoncore.Document
	for _, f := range []struct {
		name string
		dst  *bsoncore.Document
	}{{"min", &minDoc}, {"max", &maxDoc}} {
		v, err := r.Body.LookupErr(f.name)
		if err != nil {
			return args.Missing(cmd, f.name)
		}
		d, err := args.Doc(cmd, f.name, v)
		if err != nil {
			return err
		}
		*f.dst = append(bsoncore.Document(nil), d...)
	}
	zone, err := zoneArg(cmd, r.Body, true)
	if err != nil {
		return err
	}
	if err := checkRangeOrder(minDoc, maxDoc); err != nil {
		return err
	}
	if zone != nil && !h.Shards.ZoneExists(*zone) {
		return mongoerr.New(mongoerr.ZoneNotFound, "zone %s does not exist", *zone)
	}
	unlock := h.Cat.LockDDL()
	defer unlock()
	ci, err := h.zoneColl(ns)
	if err != nil {
		return err
	}
	if ci == nil {
		db, coll, _ := strings.Cut(ns, ".")
		return h.updatePendingZone(db, coll, minDoc, maxDoc, zone)
	}
	if minDoc, err = fullBound(ci, ns, "min", minDoc); err != nil {
		return err
	}
	if maxDoc, err = fullBound(ci, ns, "max", maxDoc); err != nil {
		return err
	}
	if zone != nil {
		if err := checkZonePlacement(ci, minDoc, maxDoc); err != nil {
			return err
		}
	}
	zones, unchanged, err := editZones(ci.Meta.Zones, minDoc, maxDoc, zone)
	if err != nil || unchanged {
		return err
	}
	return h.setZones(ci, zones)
}

// editZones returns zones with [minDoc, maxDoc) given to zone, sorted by min, or with that
// range removed (zone nil); unchanged when the range is already the zone's. A new range
// that overlaps another fails as MongoDB's does (checkOverlap). zones is not modified.
func editZones(zones []bsoncore.Document, minDoc, maxDoc bsoncore.Document, zone *string) (out []bsoncore.Document, unchanged bool, err error) {
	out = slices.Clone(zones)
	if zone == nil {
		return slices.DeleteFunc(out, func(z bsoncore.Document) bool {
			zmin, _ := z.Lookup("min").DocumentOK()
			zmax, _ := z.Lookup("max").DocumentOK()
			return compareBounds(zmin, minDoc) == 0 && compareBounds(zmax, maxDoc) == 0
		}), false, nil
	}
	if unchanged, err = checkOverlap(out, minDoc, maxDoc, *zone); err != nil || unchanged {
		return nil, unchanged, err
	}
	out = append(out, sharding.ZoneDoc(minDoc, maxDoc, *zone))
	slices.SortFunc(out, func(a, b bsoncore.Document) int {
		am, _ := a.Lookup("min").DocumentOK()
		bm, _ := b.Lookup("min").DocumentOK()
		return compareBounds(am, bm)
	})
	return out, false, nil
}

// setZones writes ci's zone ranges; nil when none are left.
func (h *Handlers) setZones(ci *catalog.Coll, zones []bsoncore.Document) error {
	if len(zones) == 0 {
		zones = nil
	}
	return catalog.StoreError(h.Shards.SetZones(ci.Meta.DB, ci.Meta.Name, zones))
}

// zoneColl returns the sharded collection ns, or nil when ns is not sharded (its ranges wait
// for shardCollection: zones_pending.go).
func (h *Handlers) zoneColl(ns string) (*catalog.Coll, error) {
	db, coll, ok := strings.Cut(ns, ".")
	if !ok || db == "" || coll == "" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "invalid namespace %s", ns)
	}
	ci, err := h.Cat.Lookup(db, coll)
	if err != nil {
		return nil, err
	}
	if ci == nil || ci.Hashed < 0 {
		return nil, nil
	}
	if len(ci.Levels) > 0 {
		return nil, mongoerr.New(mongoerr.NotImplemented, "zones on a hierarchical shard key are not supported by cleave")
	}
	return ci, nil
}

// checkRangeOrder refuses empty bounds and a min not below max, as MongoDB's ChunkRange does.
func checkRangeOrder(minDoc, maxDoc bsoncore.Document) error {
	if len(minDoc) <= 5 {
		return mongoerr.New(mongoerr.BadValue, "min field is empty")
	}
	if len(maxDoc) <= 5 {
		return mongoerr.New(mongoerr.BadValue, "max field is empty")
	}
	if compareBounds(minDoc, maxDoc) >= 0 {
		return mongoerr.New(mongoerr.BadValue, "min: %s should be less than max: %s", bsonx.ShellDoc(minDoc), bsonx.ShellDoc(maxDoc))
	}
	return nil
}

// compareBounds compares two bounds as MongoDB's woCompare does for documents of the same
// fields: value by value in MongoDB's order, a shorter prefix first.
func compareBounds(a, b bsoncore.Document) int {
	ae, _ := a.Elements()
	be, _ := b.Elements()
	for i := 0; i < len(ae) && i < len(be); i++ {
		if c := bsonx.Compare(ae[i].Value(), be[i].Value()); c != 0 {
			return c
		}
	}
	return len(ae) - len(be)
}

// fullBound checks that bound d's fields are a prefix of ci's shard key (ShardKeyNotFound
// otherwise) and extends it to the whole key with MinKey, as MongoDB stores zone bounds.
func fullBound(ci *catalog.Coll, ns, which string, d bsoncore.Document) (bsoncore.Document, error) {
	elems, _ := d.Elements()
	keyDoc := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: ci.Meta.ShardKey}
	if len(elems) > len(ci.ShardKey) {
		return nil, notPrefix(which, d, keyDoc, ns)
	}
	b := bsoncore.NewDocumentBuilder()
	for i, f := range ci.ShardKey {
		if i < len(elems) {
			if elems[i].Key() != f.Path {
				return nil, notPrefix(which, d, keyDoc, ns)
			}
			if elems[i].Value().Type == bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.BadValue, "Shard key element %s cannot be an array", bsonx.ShellDoc(d))
			}
			b.AppendValue(f.Path, elems[i].Value())
			continue
		}
		b.AppendMinKey(f.Path)
	}
	return b.Build(), nil
}

// notPrefix is MongoDB's refusal of a zone bound that is not a prefix of the shard key.
func notPrefix(which string, d bsoncore.Document, key bsoncore.Value, ns string) error {
	return mongoerr.New(mongoerr.ShardKeyNotFound, "%s: %s is not a prefix of the shard key %s of ns: %s",
		which, bsonx.ShellDoc(d), bsonx.ShellString(key), ns)
}

// checkZonePlacement refuses what cleave cannot place: a hashed field bounded by anything
// but a NumberLong, MinKey or MaxKey (MongoDB's refusal too), another field of a hashed key
// bounded by values, and a ranged range whose bounds share their range key (its values
// differ only past the 8 bytes that place a document, so no partition bound fits between).
func checkZonePlacement(ci *catalog.Coll, minDoc, maxDoc bsoncore.Document) error {
	if !ci.Ranged {
		for i, f := range ci.ShardKey {
			lo, hi := minDoc.Lookup(f.Path), maxDoc.Lookup(f.Path)
			if i == ci.Hashed {
				if !validHashedBound(lo) || !validHashedBound(hi) {
					return mongoerr.New(mongoerr.InvalidOptions, "there exists a field in the range %s -->> %s not of type NumberLong, MinKey, or MaxKey which corresponds to a hashed field in the shard key pattern %s",
						bsonx.ShellDoc(minDoc), bsonx.ShellDoc(maxDoc), bsonx.ShellDoc(ci.Meta.ShardKey))
				}
				continue
			}
			if lo.Type != bsoncore.TypeMinKey || hi.Type != bsoncore.TypeMinKey && hi.Type != bsoncore.TypeMaxKey {
				return mongoerr.New(mongoerr.NotImplemented, "a zone range over the shard key's field %s is not supported by cleave: its partitions are ranges of the hashed field only", f.Path)
			}
		}
	}
	lo, _ := sharding.BoundPosition(ci, minDoc)
	hi, end := sharding.BoundPosition(ci, maxDoc)
	if !end && hi <= lo {
		return mongoerr.New(mongoerr.BadValue, "zone range %s -->> %s cannot be placed by cleave: its bounds differ only past the first 8 bytes of their key encoding, which place documents",
			bsonx.ShellDoc(minDoc), bsonx.ShellDoc(maxDoc))
	}
	return nil
}

// validHashedBound reports whether v may bound a hashed field: a NumberLong, MinKey or MaxKey.
func validHashedBound(v bsoncore.Value) bool {
	return v.Type == bsoncore.TypeInt64 || v.Type == bsoncore.TypeMinKey || v.Type == bsoncore.TypeMaxKey
}

// checkOverlap refuses [minDoc, maxDoc) when it overlaps a range of zones, as MongoDB's
// ZoneInfo does (RangeOverlapConflict), unless it is that very range with the same zone:
// then same is true and nothing changes.
func checkOverlap(zones []bsoncore.Document, minDoc, maxDoc bsoncore.Document, zone string) (same bool, err error) {
	for _, z := range zones {
		zmin, _ := z.Lookup("min").DocumentOK()
		zmax, _ := z.Lookup("max").DocumentOK()
		tag, _ := z.Lookup("tag").StringValueOK()
		if compareBounds(minDoc, zmax) >= 0 || compareBounds(zmin, maxDoc) >= 0 {
			continue
		}
		if compareBounds(zmin, minDoc) == 0 && compareBounds(zmax, maxDoc) == 0 && tag == zone {
			return true, nil
		}
		return false, mongoerr.New(mongoerr.RangeOverlapConflict, "Zone range: %s -->> %s  on  %s is overlapping with existing: %s -->> %s  on  %s",
			bsonx.ShellDoc(minDoc), bsonx.ShellDoc(maxDoc), zone, bsonx.ShellDoc(zmin), bsonx.ShellDoc(zmax), tag)
	}
	return false, nil
}
