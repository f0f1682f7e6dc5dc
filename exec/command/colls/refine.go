package colls

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// refineCollectionShardKey adds suffix fields to a collection's shard key, as MongoDB 4.4+
// does: the new key must extend the current one (same fields, same kinds, in order) and an
// index must start with it. It is a catalog change only: the added fields are carried, never
// placed — a hashed key places by its hashed field already, and a ranged key keeps placing by
// its former fields (store.Collection.PlaceFields) — so no document moves and a query on the
// former key still reads only its partitions. Zone ranges get the new fields at MinKey, as
// MongoDB extends config.tags. Refused with NotImplemented: refining a hierarchical key, and
// adding a hashed field to a ranged key (that would change where every document lives).

// addRefineCommand registers refineCollectionShardKey.
func (h *Handlers) addRefineCommand(add func(*command.Command)) {
	add(&command.Command{Name: "refineCollectionShardKey", Run: h.refineCollectionShardKey, Action: auth.ActionClusterAdmin,
		Help: "add suffix fields to a collection's shard key", AdminOnly: true, Props: command.WriteConcern})
}

// refineCollectionShardKey runs {refineCollectionShardKey: ns, key}.
func (h *Handlers) refineCollectionShardKey(_ context.Context, r *command.Request) error {
	const cmd = "refineCollectionShardKey"
	first, _ := bsonx.FirstElement(r.Body)
	ns, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	var key bsoncore.Document
	err = args.ForEach(cmd, r.Body, func(k string, v bsoncore.Value) (bool, error) {
		if k != "key" {
			return false, nil
		}
		var err error
		key, err = args.Doc(cmd, k, v)
		return true, err
	})
	if err != nil {
		return err
	}
	if key == nil {
		return args.Missing(cmd, "key")
	}
	key = append(bsoncore.Document(nil), key...)
	if err := validateShardKey(key); err != nil {
		return err
	}
	unlock := h.Cat.LockDDL()
	defer unlock()
	ci, err := h.shardedColl(ns)
	if err != nil {
		return err
	}
	if equalKeys(ci.Meta.ShardKey, key) {
		return nil // the key it has already: nothing to do, as in MongoDB
	}
	if err := checkRefine(ci, key); err != nil {
		return err
	}
	db, coll, _ := strings.Cut(ns, ".")
	fields, _ := catalog.KeyPatternFields(key)
	_, err = h.Storage.Catalog.UpdateCollection(db, coll, func(c *store.Collection) error {
		if ci.Ranged {
			c.PlaceFields = catalog.PlaceFields(c.PlaceFields, len(ci.ShardKey))
		}
		c.ShardKey = key
		for i, z := range c.Zones {
			c.Zones[i] = extendZone(z, fields)
		}
		return nil
	})
	if err != nil {
		return catalog.StoreError(err)
	}
	h.Log.Info("refined shard key", zap.String("ns", ns), zap.String("key", bsonx.ShellDoc(key)))
	h.Shards.AfterMapChange()
	for _, n := range []string{"collections", "tags"} {
		_ = h.Shards.SyncConfig(n) // the manager's round rewrites it again on failure
	}
	return nil
}

// checkRefine refuses a new key that does not extend ci's (MongoDB's InvalidOptions), one
// cleave cannot refine to without moving documents, and one no index supports.
func checkRefine(ci *catalog.Coll, key bsoncore.Document) error {
	old := ci.Meta.ShardKey
	oe, _ := old.Elements()
	ne, _ := key.Elements()
	extends := len(ne) > len(oe)
	for i := 0; extends && i < len(oe); i++ {
		extends = oe[i].Key() == ne[i].Key() && bsonx.Compare(oe[i].Value(), ne[i].Value()) == 0
	}
	if !extends {
		return mongoerr.New(mongoerr.InvalidOptions, "refineCollectionShardKey shard key %s does not extend the current shard key %s",
			bsonx.ShellDoc(key), bsonx.ShellDoc(old))
	}
	switch {
	case len(ci.Levels) > 0:
		return mongoerr.New(mongoerr.NotImplemented, "refineCollectionShardKey of a hierarchical shard key is not supported by cleave")
	case ci.Ranged && !isRanged(key):
		return mongoerr.New(mongoerr.NotImplemented, "refineCollectionShardKey with a hashed field on a ranged shard key is not supported by cleave: it would move every document (use reshardCollection)")
	}
	for _, x := range ci.Indexes {
		if x.Partial == nil && x.Collation == nil && keyPrefix(x.Meta.Key, key) {
			return nil
		}
	}
	return mongoerr.New(mongoerr.InvalidOptions, "Please create an index that starts with the proposed shard key before refining the shard key of the collection")
}

// keyPrefix reports whether index key pattern ix starts with the fields of key, each of the
// same kind (hashed, or ascending).
func keyPrefix(ix, key bsoncore.Document) bool {
	xe, _ := ix.Elements()
	ke, _ := key.Elements()
	if len(xe) < len(ke) {
		return false
	}
	for i, k := range ke {
		if xe[i].Key() != k.Key() {
			return false
		}
		kh, _ := k.Value().StringValueOK()
		xh, _ := xe[i].Value().StringValueOK()
		if kh == "hashed" || xh == "hashed" {
			if kh != xh {
				return false
			}
			continue
		}
		if n, ok := bsonx.NumberAsFloat64(xe[i].Value()); !ok || n != 1 {
			return false
		}
	}
	return true
}

// extendZone returns zone record z with its bounds extended to fields, the new ones MinKey.
func extendZone(z bsoncore.Document, fields []bsonx.IndexField) bsoncore.Document {
	ext := func(d bsoncore.Document) bsoncore.Document {
		b := bsoncore.NewDocumentBuilder()
		for _, f := range fields {
			if v, err := d.LookupErr(f.Path); err == nil {
				b.AppendValue(f.Path, v)
			} else {
				b.AppendMinKey(f.Path)
			}
		}
		return b.Build()
	}
	minDoc, _ := z.Lookup("min").DocumentOK()
	maxDoc, _ := z.Lookup("max").DocumentOK()
	return bsoncore.NewDocumentBuilder().AppendValue("_id", z.Lookup("_id")).
		AppendDocument("min", ext(minDoc)).AppendDocument("max", ext(maxDoc)).
		AppendValue("tag", z.Lookup("tag")).Build()
}
