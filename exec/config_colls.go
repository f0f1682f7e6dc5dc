package exec

import (
	"github.com/cleavedb/cleave/exec/write"

	"github.com/cleavedb/cleave/exec/catalog"

	"bytes"
	"context"
	"encoding/binary"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// The config database is materialized: config.version, shards, databases, collections,
// chunks and mongos are real collections whose documents are rewritten from the catalog
// (configSync) whenever a find reads one of them, after every partition-map change and on
// each manager round when the catalog changed. So find, count and aggregate — mongosh's
// sh.status() and getShardDistribution() use all three — read them like any collection.

// configColls are the config collections derived from the catalog.
var configColls = []string{"version", "shards", "databases", "collections", "chunks", "mongos"}

// findConfig runs before a find on the config database: it refreshes the collection the
// find reads when it is one of the derived ones, then lets the find read it (handled false).
//
//nolint:unparam // find's hook may answer by itself; the derived collections never need to
func (e *Executor) findConfig(_ context.Context, _ *request, a *findArgs) (handled bool, err error) {
	for _, n := range configColls {
		if n == a.coll {
			return false, e.syncConfig(n)
		}
	}
	return false, nil
}

// syncConfigAll refreshes every derived config collection.
func (e *Executor) syncConfigAll() error {
	for _, n := range configColls {
		if err := e.syncConfig(n); err != nil {
			return err
		}
	}
	return nil
}

// syncConfig rewrites config.<name> so that it holds exactly the documents the catalog
// implies, writing only the differences.
func (e *Executor) syncConfig(name string) error {
	s := e.shardSt()
	if s == nil {
		return nil
	}
	s.configMu.Lock()
	defer s.configMu.Unlock()
	want := e.configDocs(name)
	ci, err := e.cat.ForWrite("config", name)
	if err != nil {
		return err
	}
	have := map[string]bsoncore.Document{}
	for i := 0; i < ci.Map.Len(); i++ {
		lo, hi := ci.Map.Range(i)
		it, err := e.st.Shards[ci.Map.Partition(i).Shard].NewDocIter(ci.Meta.ID, lo, hi)
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
	wr := e.write.NewWriter(ci)
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

// configDocs returns the documents config.<name> should hold.
func (e *Executor) configDocs(name string) []bsoncore.Document {
	state := e.st.Catalog.State()
	var out []bsoncore.Document
	switch name {
	case "version":
		out = append(out, bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).
			AppendObjectID("clusterId", clusterID).Build())
	case "shards":
		for i := range e.st.Shards {
			out = append(out, bsoncore.NewDocumentBuilder().
				AppendString("_id", shardName(i)).
				AppendString("host", shardName(i)+"/"+e.listenAddr()).
				AppendInt32("state", 1).
				AppendTimestamp("topologyTime", uint32(e.started.Unix()), 1).
				Build())
		}
	case "databases":
		for _, db := range state.Databases() {
			if db.Name == "admin" || db.Name == "config" || db.Name == "local" {
				continue
			}
			out = append(out, bsoncore.NewDocumentBuilder().
				AppendString("_id", db.Name).
				AppendString("primary", shardName(0)).
				AppendBoolean("partitioned", true).
				AppendDocument("version", bsoncore.NewDocumentBuilder().
					AppendBinary("uuid", 4, nameUUID(db.Name)).
					AppendTimestamp("timestamp", uint32(e.started.Unix()), 1).
					AppendInt32("lastMod", 1).Build()).
				Build())
		}
	case "collections":
		e.forShardedColls(func(c *store.Collection) {
			out = append(out, bsoncore.NewDocumentBuilder().
				AppendString("_id", c.DB+"."+c.Name).
				AppendObjectID("lastmodEpoch", epochID(c)).
				AppendDateTime("lastmod", c.CreatedAt.UnixMilli()).
				AppendTimestamp("timestamp", uint32(c.CreatedAt.Unix()), 1).
				AppendBinary("uuid", 4, c.UUID[:]).
				AppendDocument("key", c.ShardKey).
				AppendBoolean("unique", false).
				AppendBoolean("noBalance", false).
				AppendInt64("throughput", c.Throughput).
				Build())
		})
	case "chunks":
		e.forShardedColls(func(c *store.Collection) {
			out = append(out, chunkDocs(c, e.started)...)
		})
	case "mongos":
		now := time.Now()
		out = append(out, bsoncore.NewDocumentBuilder().
			AppendString("_id", e.listenAddr()).
			AppendDateTime("ping", now.UnixMilli()).
			AppendInt64("up", int64(now.Sub(e.started).Seconds())).
			AppendBoolean("waiting", true).
			AppendString("mongoVersion", serverVersion).
			AppendArray("advisoryHostFQDNs", bsoncore.NewArrayBuilder().Build()).
			Build())
	}
	return out
}

// forShardedColls calls fn for every sharded collection, databases and names in order.
func (e *Executor) forShardedColls(fn func(c *store.Collection)) {
	state := e.st.Catalog.State()
	for _, db := range state.Databases() {
		for _, c := range state.Collections(db.Name) {
			if c.Sharded() {
				fn(c)
			}
		}
	}
}

// chunkDocs returns the config.chunks documents of c: one per partition, with min and
// max in MongoDB's hashed shape (NumberLong, MinKey and MaxKey at the ends).
func chunkDocs(c *store.Collection, started time.Time) []bsoncore.Document {
	fields, _ := catalog.KeyPatternFields(c.ShardKey)
	ns := c.DB + "." + c.Name
	out := make([]bsoncore.Document, 0, len(c.Partitions))
	for i, p := range c.Partitions {
		lo, hi := c.PartitionRange(i)
		var oid [12]byte
		binary.BigEndian.PutUint32(oid[:4], uint32(c.ID))
		binary.BigEndian.PutUint64(oid[4:], p.ID)
		ts := uint32(started.Unix())
		out = append(out, bsoncore.NewDocumentBuilder().
			AppendObjectID("_id", oid).
			AppendBinary("uuid", 4, c.UUID[:]).
			AppendString("ns", ns).
			AppendDocument("min", chunkBound(fields, lo, i == 0, false)).
			AppendDocument("max", chunkBound(fields, hi, i == len(c.Partitions)-1, true)).
			AppendString("shard", shardName(p.Shard)).
			AppendTimestamp("lastmod", uint32(c.Version), uint32(i)).
			AppendTimestamp("onCurrentShardSince", ts, 1).
			AppendArray("history", bsoncore.NewArrayBuilder().AppendDocument(
				bsoncore.NewDocumentBuilder().AppendTimestamp("validAfter", ts, 1).
					AppendString("shard", shardName(p.Shard)).Build()).Build()).
			AppendInt64("partitionId", int64(p.ID)).
			Build())
	}
	return out
}

// chunkBound is a chunk's min or max: the hashed field at hash h (MinKey or MaxKey at the
// ends of the space), the other fields of a compound key at MinKey (min) or MaxKey (max).
func chunkBound(fields []bsonx.IndexField, h uint64, end, isMax bool) bsoncore.Document {
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

// shardName is the name of shard i in config.shards, explain and partitionStats.
func shardName(i int) string { return "shard-" + strconv.Itoa(i) }

// clusterID is config.version's clusterId.
var clusterID = [12]byte{'c', 'l', 'e', 'a', 'v', 'e', 0, 0, 0, 0, 0, 1}

// epochID is config.collections' lastmodEpoch of c, derived from its UUID.
func epochID(c *store.Collection) [12]byte {
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

// listenAddr is the address the server listens on, from the parsed configuration.
func (e *Executor) listenAddr() string {
	net, ok := e.opts.Parsed.Lookup("net").DocumentOK()
	if !ok {
		return "localhost:27017"
	}
	host, _ := net.Lookup("bindIp").StringValueOK()
	port, _ := net.Lookup("port").StringValueOK()
	return host + ":" + port
}
