package sharding

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// Sharding a collection that holds documents (the seeds' "migrate a single-partition
// collection to a partitioned one", without export and import). An unsharded collection
// keeps every document at hash 0 in one partition on one shard. The conversion:
//
//   - holds the DDL lock (Catalog.LockDDL) and every key-lock stripe: writes to every collection wait for the
//     conversion (NB: a deliberate simplification — the conversion is one pass over the
//     collection, and blocking writes keeps it trivially exact);
//   - rewrites every document from hash 0 to the hash of its shard key, with its index
//     entries and the _id index entries a sharded collection needs, in ONE atomic batch on
//     that shard, then commits the new shard key and partitions in the catalog. The new
//     partitions all stay on the collection's shard; the balancer spreads them afterwards
//     with ordinary online moves;
//   - readers are not blocked: a scan's snapshot sees every document exactly once (before
//     or after the batch), and a query planned on the new map reads the new layout.
//
// A crash between the data batch and the catalog commit leaves an unsharded collection
// with documents off hash 0; repairAtStart moves them back (undoConversion), and the
// client, which got no answer, runs shardCollection again.

// ConvertToSharded shards the existing collection c by spec.key into n partitions. The
// caller holds the DDL lock (Catalog.LockDDL).
func (m *Manager) ConvertToSharded(c *store.Collection, spec Spec, n int) (*store.Collection, error) {
	oci, err := m.cat.Info(c)
	if err != nil {
		return nil, err
	}
	src := c.Partitions[0].Shard
	layout := shard.InitialLayout(n, 1, c.NextPartitionID)
	for i := range layout {
		layout[i].Shard = src
	}
	next := *c
	next.ShardKey = spec.Key
	next.Partitions = StoreParts(layout)
	nci, err := catalog.Compile(&next)
	if err != nil {
		return nil, err
	}
	unlock := m.cat.Locks().LockAll()
	defer unlock()
	db := m.cat.Shards()[src]
	b := db.NewBatch()
	defer b.Close()
	it, err := db.NewDocIter(c.ID, 0, 0)
	if err != nil {
		return nil, catalog.StoreError(err)
	}
	docs := 0
	for it.Next() {
		doc := bsoncore.Document(it.Doc())
		h, err := nci.ShardHash(doc)
		if err != nil {
			_ = it.Close()
			return nil, err
		}
		if err := rehashDoc(b, oci, nci, it.Hash(), h, it.ID(), doc); err != nil {
			_ = it.Close()
			return nil, err
		}
		docs++
	}
	if err := it.Close(); err != nil {
		return nil, catalog.StoreError(err)
	}
	if err := b.Commit(true); err != nil {
		return nil, catalog.StoreError(err)
	}
	out, err := m.cat.Store().UpdateCollection(c.DB, c.Name, func(x *store.Collection) error {
		x.ShardKey = spec.Key
		x.Partitions = next.Partitions
		x.NextPartitionID = c.NextPartitionID + uint64(len(layout))
		if spec.Throughput > 0 {
			x.Throughput, x.Autoscale = spec.Throughput, spec.Autoscale
		}
		return nil
	})
	if err != nil {
		if uerr := m.undoConversion(c); uerr != nil {
			m.log.Error("cannot undo a failed shardCollection; the next start will", zap.Error(uerr))
		}
		return nil, catalog.ChangeError(err, c.DB, c.Name)
	}
	m.conversions.Add(1)
	m.log.Info("sharded an existing collection", zap.String("ns", c.DB+"."+c.Name),
		zap.Int("documents", docs), zap.Int("partitions", len(layout)))
	return out, nil
}

// rehashDoc stages the move of one document from hash `from` (indexed as in oci) to hash
// `to` (indexed as in nci) in batch b.
func rehashDoc(b catalog.Batch, oci, nci *catalog.Coll, from, to uint64, id []byte, doc bsoncore.Document) error {
	coll := oci.Meta.ID
	for _, xi := range oci.WriteIndexes {
		if xi.IsID && !oci.IDIndexed {
			continue
		}
		if err := xi.Keys(doc, func(k []byte) error {
			b.DeleteIndex(coll, xi.Meta.ID, k, from, id)
			return nil
		}); err != nil {
			return err
		}
	}
	for _, xi := range nci.WriteIndexes {
		if xi.IsID && !nci.IDIndexed {
			continue
		}
		if err := xi.Keys(doc, func(k []byte) error {
			b.SetIndex(coll, xi.Meta.ID, k, to, id)
			return nil
		}); err != nil {
			return err
		}
	}
	if from != to {
		if err := b.PreserveDoc(coll, from, id, doc); err != nil {
			return err
		}
		b.DeleteDoc(coll, from, id)
	}
	b.SetDoc(coll, to, id, doc)
	b.AddStats(coll, from, -1, -int64(len(doc)))
	b.AddStats(coll, to, 1, int64(len(doc)))
	return nil
}

// undoConversion moves the documents of unsharded collection c that are not at hash 0
// (left by a shardCollection that crashed before its catalog commit) back to hash 0,
// dropping the _id index entries the conversion wrote. The caller holds the DDL lock (Catalog.LockDDL).
func (m *Manager) undoConversion(c *store.Collection) error {
	ci, err := m.cat.Info(c)
	if err != nil {
		return err
	}
	db := m.cat.Shards()[c.Partitions[0].Shard]
	it, err := db.NewDocIter(c.ID, 1, 0)
	if err != nil {
		return err
	}
	defer func() { _ = it.Close() }()
	if !it.Next() {
		return it.Err()
	}
	// The conversion's layout indexed _id; the unsharded one does not.
	sharded := *ci
	sharded.IDIndexed = true
	b := db.NewBatch()
	defer b.Close()
	n := 0
	for ok := true; ok; ok = it.Next() {
		if err := rehashDoc(b, &sharded, ci, it.Hash(), 0, it.ID(), it.Doc()); err != nil {
			return err
		}
		n++
	}
	if err := it.Err(); err != nil {
		return err
	}
	if err := b.Commit(true); err != nil {
		return err
	}
	m.log.Warn("undid an interrupted shardCollection", zap.String("ns", c.DB+"."+c.Name), zap.Int("documents", n))
	return nil
}
