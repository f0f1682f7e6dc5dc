package colls

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Zone ranges defined before shardCollection (exec/sharding/zones_pending.go keeps them): as on
// MongoDB, updateZoneKeyRange accepts a namespace not sharded yet (or not even created), whose
// shard key is unknown, and shardCollection then checks the ranges against its key, creates
// the first partitions along them (each range on a shard of its zone; with
// presplitHashedZones, one partition per shard of its zone) and keeps them as the
// collection's.

// updatePendingZone adds [minDoc, maxDoc) to zone for namespace db.coll, not sharded yet, or
// removes that range (zone nil). The caller holds the DDL lock.
func (h *Handlers) updatePendingZone(db, coll string, minDoc, maxDoc bsoncore.Document, zone *string) error {
	minElems, _ := minDoc.Elements()
	maxElems, _ := maxDoc.Elements()
	same := len(minElems) == len(maxElems)
	for i := 0; same && i < len(minElems); i++ {
		same = minElems[i].Key() == maxElems[i].Key()
	}
	if !same {
		return mongoerr.New(mongoerr.BadValue, "min: %s and max: %s must name the same shard key fields in the same order",
			bsonx.ShellDoc(minDoc), bsonx.ShellDoc(maxDoc))
	}
	for _, d := range []bsoncore.Document{minDoc, maxDoc} {
		elems, _ := d.Elements()
		for _, el := range elems {
			if el.Value().Type == bsoncore.TypeArray {
				return mongoerr.New(mongoerr.BadValue, "Shard key element %s cannot be an array", bsonx.ShellDoc(d))
			}
		}
	}
	zones, unchanged, err := editZones(h.Shards.PendingZones(db, coll), minDoc, maxDoc, zone)
	if err != nil || unchanged {
		return err
	}
	return catalog.StoreError(h.Shards.SetPendingZones(db, coll, zones))
}

// zonesForKey checks the zone ranges defined for ns before it is sharded against its
// proposed shard key, as MongoDB's shardCollection does (InvalidOptions), and returns them
// with their bounds extended to the whole key; cleave's own refusals of what it cannot
// place follow (checkZonePlacement).
func zonesForKey(key bsoncore.Document, ns string, pending []bsoncore.Document) ([]bsoncore.Document, *catalog.Coll, error) {
	ci, err := catalog.Compile(&store.Collection{ShardKey: key, Partitions: []store.Partition{{ID: 1}}})
	if err != nil || len(pending) == 0 {
		return nil, ci, err
	}
	keyDoc := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: key}
	var out []bsoncore.Document
	for _, z := range pending {
		zmin, _ := z.Lookup("min").DocumentOK()
		zmax, _ := z.Lookup("max").DocumentOK()
		minDoc, err1 := fullBound(ci, ns, "min", zmin)
		maxDoc, err2 := fullBound(ci, ns, "max", zmax)
		if err1 != nil || err2 != nil {
			return nil, nil, mongoerr.New(mongoerr.InvalidOptions, "the proposed shard key %s does not match with the shard key of the existing zone %s -->> %s",
				bsonx.ShellString(keyDoc), bsonx.ShellDoc(zmin), bsonx.ShellDoc(zmax))
		}
		if ci.Hashed >= 0 && !ci.Ranged && (!validHashedBound(minDoc.Lookup(ci.ShardKey[ci.Hashed].Path)) || !validHashedBound(maxDoc.Lookup(ci.ShardKey[ci.Hashed].Path))) {
			return nil, nil, mongoerr.New(mongoerr.InvalidOptions, "cannot do hash sharding with the proposed key %s because there exists a zone %s -->> %s whose boundaries are not of type NumberLong, MinKey or MaxKey",
				bsonx.ShellString(keyDoc), bsonx.ShellDoc(zmin), bsonx.ShellDoc(zmax))
		}
		if len(ci.Levels) > 0 {
			return nil, nil, mongoerr.New(mongoerr.NotImplemented, "zones on a hierarchical shard key are not supported by cleave")
		}
		if err := checkZonePlacement(ci, minDoc, maxDoc); err != nil {
			return nil, nil, err
		}
		tag, _ := z.Lookup("tag").StringValueOK()
		b := bsoncore.NewDocumentBuilder().AppendValue("_id", z.Lookup("_id")).
			AppendDocument("min", minDoc).AppendDocument("max", maxDoc).AppendString("tag", tag)
		out = append(out, b.Build())
	}
	return out, ci, nil
}

// checkPresplit applies MongoDB's rules of presplitHashedZones: an empty collection (empty),
// zones set up and a hashed field in the key (31387); with the hashed field first, one zone
// covering the whole key range (31412); with fields before the hashed one, no MinKey or
// MaxKey lower bound on them (31388; cleave refuses values there, so a zone passing its own
// checks never does).
func checkPresplit(ci *catalog.Coll, zones []bsoncore.Document, empty bool) error {
	if !empty || len(zones) == 0 || ci.Ranged || ci.Hashed < 0 {
		return mongoerr.New(mongoerr.Location31387, "'presplitHashedZones' is only supported when the collection is empty, zones are set up and shard key pattern has a hashed field")
	}
	if ci.Hashed == 0 {
		whole := len(zones) == 1
		if whole {
			zmin, _ := zones[0].Lookup("min").DocumentOK()
			zmax, _ := zones[0].Lookup("max").DocumentOK()
			whole = allOf(zmin, bsoncore.TypeMinKey) && allOf(zmax, bsoncore.TypeMaxKey)
		}
		if !whole {
			return mongoerr.New(mongoerr.Location31412, "For hashed prefix shard keys, 'presplitHashedZones' is only supported when there is a single zone defined which covers entire shard key range")
		}
		return nil
	}
	tag, _ := zones[0].Lookup("tag").StringValueOK()
	return mongoerr.New(mongoerr.Location31388, "One or more zones are not defined in a manner that supports hashed pre-splitting. Cannot have MinKey or MaxKey in the lower bound for fields preceding the hashed field but found one, for zone %s", tag)
}

// allOf reports whether every value of d has type t.
func allOf(d bsoncore.Document, t bsoncore.Type) bool {
	elems, _ := d.Elements()
	for _, el := range elems {
		if el.Value().Type != t {
			return false
		}
	}
	return len(elems) > 0
}
