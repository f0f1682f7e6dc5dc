package sharding

import (
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A collection's own balancing switches, as on MongoDB: noBalance (mongosh's
// sh.disableBalancing writes it into config.collections) keeps the balancer from moving or
// merging the collection's partitions; setAllowMigrations: false (config.collections'
// permitMigrations: false) refuses every move of them, moveChunk's too. Both live in the
// collection's catalog record (store.Collection), so a restart and, in a cluster, every
// node see them; the config.collections documents are derived from it, and a write of
// noBalance into them is carried back into the catalog (AdoptConfigCollections).

// errMigrationsBlocked is MongoDB's answer to a move of a collection whose migrations are
// not allowed.
var errMigrationsBlocked = mongoerr.New(mongoerr.ConflictingOperationInProgress, "Collection is undergoing changes so moveChunk is not allowed.")

// SetBalancing sets the collection's noBalance (when noBalance is not nil) and its
// migrations switch (allowMigrations, when not nil), then rewrites config.collections.
func (m *Manager) SetBalancing(db, name string, noBalance, allowMigrations *bool) error {
	c := m.cat.Store().State().Collection(db, name)
	if c == nil || !c.Sharded() {
		return mongoerr.New(mongoerr.NamespaceNotSharded, "Collection must be sharded so migrations can be blocked")
	}
	_, err := m.cat.Store().UpdateCollection(db, name, func(c *store.Collection) error {
		if noBalance != nil {
			c.NoBalance = *noBalance
		}
		if allowMigrations != nil {
			c.NoMigrations = !*allowMigrations
		}
		return nil
	})
	if err != nil {
		return catalog.StoreError(err)
	}
	return m.SyncConfig("collections")
}

// AdoptConfigCollections carries the noBalance fields a client wrote into config.collections
// (mongosh's sh.disableBalancing and sh.enableBalancing update them) into the catalog, then
// rewrites config.collections from it; the update runs just before, under the command.
func (m *Manager) AdoptConfigCollections() error {
	ci, err := m.cat.Lookup("config", "collections")
	if err != nil || ci == nil {
		return err
	}
	var firstErr error
	m.forShardedColls(func(c *store.Collection) {
		key := bsoncore.NewDocumentBuilder().AppendString("_id", c.DB+"."+c.Name).Build()
		doc, err := m.configDoc(ci, key)
		if err != nil || doc == nil {
			firstErr = errors.Join(firstErr, err)
			return
		}
		want, _ := doc.Lookup("noBalance").BooleanOK()
		if want == c.NoBalance {
			return
		}
		m.log.Info("config.collections: noBalance written", zap.String("ns", c.DB+"."+c.Name), zap.Bool("noBalance", want))
		if _, err := m.cat.Store().UpdateCollection(c.DB, c.Name, func(c *store.Collection) error {
			c.NoBalance = want
			return nil
		}); err != nil {
			firstErr = errors.Join(firstErr, catalog.StoreError(err))
		}
	})
	return errors.Join(firstErr, m.SyncConfig("collections"))
}

// configDoc returns the document of the config collection ci whose _id is key's, or nil.
func (m *Manager) configDoc(ci *catalog.Coll, key bsoncore.Document) (bsoncore.Document, error) {
	_, id := catalog.DocID(key, nil)
	hash, err := ci.ShardHash(key)
	if err != nil {
		return nil, err
	}
	doc, err := m.cat.Shards()[ci.Map.Partition(ci.Map.Locate(hash)).Shard].GetDoc(ci.Meta.ID, hash, id, nil)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return doc, catalog.StoreError(err)
}

// BalancerCompliance reports whether the balancer leaves ci's partitions where they are
// (balancerCollectionStatus' balancerCompliant) and, when it would move one, MongoDB's name
// for the first reason ("draining", "zoneViolation" or "chunksImbalance"): the policy's
// decision as a round with the balancer on would make it now.
func (m *Manager) BalancerCompliance(ci *catalog.Coll) (compliant bool, violation string) {
	v := m.CollectionView(ci)
	v.NoMoves = false
	for _, a := range m.policy.Decide(v, time.Now()) {
		var reason shard.Reason
		switch a := a.(type) {
		case *shard.MoveAction:
			reason = a.Reason
		case *shard.SplitAction: // at a zone's bound, or a load split whose right child moves
			if !a.MoveRight && a.Reason != shard.ReasonZone {
				continue
			}
			reason = a.Reason
		default:
			continue
		}
		switch reason {
		case shard.ReasonDrain:
			return false, "draining"
		case shard.ReasonZone:
			return false, "zoneViolation"
		default:
			return false, "chunksImbalance"
		}
	}
	return true, ""
}

// MaxChunkSizeMB is the size, in MiB, above which a partition of ci splits: its own chunk
// size, or the server's (balancerCollectionStatus' chunkSize).
func (m *Manager) MaxChunkSizeMB(ci *catalog.Coll) int64 {
	if ci.Meta.ChunkSizeBytes > 0 {
		return ci.Meta.ChunkSizeBytes >> 20
	}
	return m.policy.Options().PartitionMaxBytes >> 20
}

// ConfigureBalancing sets, for the sharded collection db.name, the size above which its
// partitions split (chunkBytes, when not nil; 0: the server's) and whether cold partitions
// of it merge (autoMerge, when not nil), then rewrites config.collections. The next manager
// round splits by the new size.
func (m *Manager) ConfigureBalancing(db, name string, chunkBytes *int64, autoMerge *bool) error {
	c := m.cat.Store().State().Collection(db, name)
	if c == nil || !c.Sharded() {
		return mongoerr.New(mongoerr.NamespaceNotSharded, "Collection %s.%s is not sharded.", db, name)
	}
	_, err := m.cat.Store().UpdateCollection(db, name, func(c *store.Collection) error {
		if chunkBytes != nil {
			c.ChunkSizeBytes = *chunkBytes
		}
		if autoMerge != nil {
			c.NoAutoMerge = !*autoMerge
		}
		return nil
	})
	if err != nil {
		return catalog.StoreError(err)
	}
	m.log.Info("collection balancing configured", zap.String("ns", db+"."+name))
	return m.SyncConfig("collections")
}
