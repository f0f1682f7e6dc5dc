package sharding

import (
	"bytes"
	"encoding/binary"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// The config database is materialized: config.version, shards, databases, collections,
// chunks and mongos are real collections whose documents are rewritten from the catalog
// (configSync) whenever a find reads one of them, after every partition-map change and on
// each manager round when the catalog changed. So find, count and aggregate — mongosh's
// sh.status() and getShardDistribution() use all three — read them like any collection.

// ConfigColls are the config collections derived from the catalog.
var ConfigColls = []string{"version", "shards", "databases", "collections", "chunks", "tags", "mongos"}

// syncConfigAll refreshes every derived config collection.
func (m *Manager) syncConfigAll() error {
	for _, n := range ConfigColls {
		if err := m.SyncConfig(n); err != nil {
			return err
		}
	}
	return nil
}

// SyncConfig rewrites config.<name> so that it holds exactly the documents the catalog
// implies, writing only the differences.
func (m *Manager) SyncConfig(name string) error {
	if m == nil {
		return nil
	}
	m.configMu.Lock()
	defer m.configMu.Unlock()
	want := m.ConfigDocs(name)
	ci, err := m.cat.ForWrite("config", name)
	if err != nil {
		return err
	}
	have := map[string]bsoncore.Document{}
	for i := 0; i < ci.Map.Len(); i++ {
		lo, hi := ci.Map.Range(i)
		it, err := m.cat.Shards()[ci.Map.Partition(i).Shard].NewDocIter(ci.Meta.ID, lo, hi)
		if err != nil {
			return catalog.StoreError(err)
		}
		for it.Next() {
			have[string(it.ID())] = append(bsoncore.Document(nil), it.Doc()...)
		}
		if err := it.Close(); err != nil {
			return catalog.StoreError(err)
		}
	}
	var writes []write.DocWrite
	for _, d := range want {
		_, id := catalog.DocID(d, nil)
		old := have[string(id)]
		delete(have, string(id))
		if bytes.Equal(old, d) {
			continue
		}
		h, err := ci.ShardHash(d)
		if err != nil {
			continue
		}
		writes = append(writes, write.DocWrite{Hash: h, ID: id, Old: old, New: d})
	}
	for id, old := range have {
		h, _ := ci.ShardHash(old)
		writes = append(writes, write.DocWrite{Hash: h, ID: []byte(id), Old: old})
	}
	if len(writes) == 0 {
		return nil
	}
	wr := m.write.NewWriter(ci)
	var hashes []uint64
	for i := range writes {
		hashes = wr.LockHashes(hashes, &writes[i])
	}
	wr.Lock(hashes)
	defer wr.Release()
	for i := range writes {
		if err := wr.Stage(&writes[i]); err != nil {
			return err
		}
	}
	return wr.Commit(true)
}

// ConfigDocs returns the documents config.<name> should hold.
func (m *Manager) ConfigDocs(name string) []bsoncore.Document {
	state := m.cat.Store().State()
	var out []bsoncore.Document
	switch name {
	case "version":
		out = append(out, bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).
			AppendObjectID("clusterId", clusterID).Build())
	case "shards":
		zones := m.ShardZones()
		for i := range m.cat.Shards() {
			b := bsoncore.NewDocumentBuilder().
				AppendString("_id", catalog.ShardName(i)).
				AppendString("host", m.shardHost(i)).
				AppendInt32("state", 1).
				AppendTimestamp("topologyTime", uint32(m.mopts.Started.Unix()), 1)
			if m.IsDraining(i) { // config.shards' draining field (removeShard)
				b.AppendBoolean("draining", true)
			}
			appendTags(b, zones, i)
			m.appendReplicas(b, i)
			out = append(out, b.Build())
		}
	case "databases":
		for _, db := range state.Databases() {
			if db.Name == "admin" || db.Name == "config" || db.Name == "local" {
				continue
			}
			out = append(out, bsoncore.NewDocumentBuilder().
				AppendString("_id", db.Name).
				AppendString("primary", catalog.ShardName(0)).
				AppendBoolean("partitioned", true).
				AppendDocument("version", bsoncore.NewDocumentBuilder().
					AppendBinary("uuid", 4, nameUUID(db.Name)).
					AppendTimestamp("timestamp", uint32(m.mopts.Started.Unix()), 1).
					AppendInt32("lastMod", 1).Build()).
				Build())
		}
	case "collections":
		m.forShardedColls(func(c *store.Collection) { out = append(out, configCollectionDoc(c)) })
	case "chunks":
		m.forShardedColls(func(c *store.Collection) {
			var budgets []float64
			if t := Throughput(state, c).RU; t > 0 {
				budgets = shard.Shares(t, len(c.Partitions), Shares(c))
			}
			out = append(out, chunkDocs(c, m.mopts.Started, budgets)...)
		})
	case "tags":
		out = m.tagDocs()
	case "mongos":
		now := time.Now()
		out = append(out, bsoncore.NewDocumentBuilder().
			AppendString("_id", m.mopts.ListenAddr).
			AppendDateTime("ping", now.UnixMilli()).
			AppendInt64("up", int64(now.Sub(m.mopts.Started).Seconds())).
			AppendBoolean("waiting", true).
			AppendString("mongoVersion", m.mopts.Version).
			AppendArray("advisoryHostFQDNs", bsoncore.NewArrayBuilder().Build()).
			Build())
	}
	return out
}

// forShardedColls calls fn for every sharded collection, databases and names in order.
func (m *Manager) forShardedColls(fn func(c *store.Collection)) {
	state := m.cat.Store().State()
	for _, db := range state.Databases() {
		for _, c := range state.Collections(db.Name) {
			if c.Sharded() {
				fn(c)
			}
		}
	}
}

// chunkDocs returns the config.chunks documents of c: one per partition, with min and
// max in MongoDB's hashed shape (NumberLong, MinKey and MaxKey at the ends), and cleave's
// partitionId and, when throughput is provisioned, the partition's budget in RU/s
// (budgetRUPerSec, from budgets by partition index; nil: none).
func chunkDocs(c *store.Collection, started time.Time, budgets []float64) []bsoncore.Document {
	fields, _ := catalog.KeyPatternFields(c.ShardKey)
	place := catalog.PlaceFields(c.PlaceFields, len(fields))
	ns := c.DB + "." + c.Name
	out := make([]bsoncore.Document, 0, len(c.Partitions))
	for i, p := range c.Partitions {
		lo, hi := c.PartitionRange(i)
		var oid [12]byte
		binary.BigEndian.PutUint32(oid[:4], uint32(c.ID))
		binary.BigEndian.PutUint64(oid[4:], p.ID)
		ts := uint32(started.Unix())
		b := bsoncore.NewDocumentBuilder().
			AppendObjectID("_id", oid).
			AppendBinary("uuid", 4, c.UUID[:]).
			AppendString("ns", ns).
			AppendDocument("min", chunkBound(fields, place, lo, i == 0, false)).
			AppendDocument("max", chunkBound(fields, place, hi, i == len(c.Partitions)-1, true)).
			AppendString("shard", catalog.ShardName(p.Shard)).
			AppendTimestamp("lastmod", uint32(c.Version), uint32(i)).
			AppendTimestamp("onCurrentShardSince", ts, 1).
			AppendArray("history", bsoncore.NewArrayBuilder().AppendDocument(
				bsoncore.NewDocumentBuilder().AppendTimestamp("validAfter", ts, 1).
					AppendString("shard", catalog.ShardName(p.Shard)).Build()).Build()).
			AppendInt64("partitionId", int64(p.ID))
		if i < len(budgets) {
			b.AppendDouble("budgetRUPerSec", budgets[i])
		}
		out = append(out, b.Build())
	}
	return out
}

// chunkBound is a chunk's min or max: the hashed field at hash h (MinKey or MaxKey at the
// ends of the space), the other fields of a compound key at MinKey (min) or MaxKey (max);
// a ranged key's values at range key h, of its first place fields (chunks_ranged.go).
func chunkBound(fields []bsonx.IndexField, place int, h uint64, end, isMax bool) bsoncore.Document {
	if !end && rangedFields(fields) {
		return rangedBound(fields, place, h)
	}
	b := bsoncore.NewDocumentBuilder()
	for _, f := range fields {
		switch {
		case f.Hashed && !end:
			b.AppendInt64(f.Path, shard.HashToInt64(h))
		case isMax:
			b.AppendMaxKey(f.Path)
		default:
			b.AppendMinKey(f.Path)
		}
	}
	return b.Build()
}

// clusterID is config.version's clusterId.
var clusterID = [12]byte{'c', 'l', 'e', 'a', 'v', 'e', 0, 0, 0, 0, 0, 1}

// EpochID is config.collections' lastmodEpoch of c, derived from its UUID.
func EpochID(c *store.Collection) [12]byte {
	var id [12]byte
	copy(id[:], c.UUID[:12])
	return id
}

// nameUUID derives a stable UUID-shaped value from a database name.
func nameUUID(name string) []byte {
	u := make([]byte, 16)
	binary.BigEndian.PutUint64(u, bsonx.HashKey([]byte(name)))
	binary.BigEndian.PutUint64(u[8:], bsonx.HashKey([]byte("db:"+name)))
	return u
}

// configCollectionDoc is the config.collections document of sharded collection c.
func configCollectionDoc(c *store.Collection) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().
		AppendString("_id", c.DB+"."+c.Name).
		AppendObjectID("lastmodEpoch", EpochID(c)).
		AppendDateTime("lastmod", c.CreatedAt.UnixMilli()).
		AppendTimestamp("timestamp", uint32(c.CreatedAt.Unix()), 1).
		AppendBinary("uuid", 4, c.UUID[:]).
		AppendDocument("key", c.ShardKey).
		AppendBoolean("unique", false).
		AppendBoolean("noBalance", c.NoBalance)
	if c.NoMigrations {
		b.AppendBoolean("permitMigrations", false)
	}
	if c.ChunkSizeBytes > 0 {
		b.AppendInt64("maxChunkSizeBytes", c.ChunkSizeBytes)
	}
	if c.NoAutoMerge {
		b.AppendBoolean("enableAutoMerge", false)
	}
	return b.AppendInt64("throughput", c.Throughput).Build()
}
