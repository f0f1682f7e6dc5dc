package route

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/validate"
	"github.com/cleavedb/cleave/store"
)

// Statistics and validation in cluster mode: collStats, $collStats and dataSize sum what
// each node measures of its own shards, and validate merges each node's validation of its
// own shards. The router asks every other node holding partitions of the collection with
// _cleaveShardStats {what: "sizes" | "validate"}; a node that cannot be reached fails the
// command (HostUnreachable), so no statistic silently misses a shard.

// LocalOwnedSizes is ownedSizes for this node's shards (nil for every other node's).
func (r *Router) LocalOwnedSizes(ci *catalog.Coll) []*CollSizes {
	all := r.cat.Shards()
	out := make([]*CollSizes, len(all))
	for i := 0; i < ci.Map.Len(); i++ {
		p := ci.Map.Partition(i)
		if _, remote := all[p.Shard].Node(); remote {
			continue
		}
		lo, hi := ci.Map.Range(i)
		s := out[p.Shard]
		if s == nil {
			s = &CollSizes{}
			out[p.Shard] = s
		}
		s.addRange(all[p.Shard], ci, lo, hi)
	}
	for _, s := range out {
		if s != nil {
			s.finish(ci)
		}
	}
	return out
}

// ClusterCollSizes measures c as collStats does, over every node: on each shard only the
// partitions it owns, so that a range being copied, or the source of a finished move
// awaiting its deletion, is not counted twice (dataSize, dbStats and listDatabases agree
// with collStats while the balancer moves partitions).
func (r *Router) ClusterCollSizes(ctx context.Context, c *store.Collection) (CollSizes, error) {
	if catalog.IsView(c) {
		return r.collSizes(c), nil
	}
	ci, err := r.cat.Info(c)
	if err != nil {
		return CollSizes{}, err
	}
	per, err := r.OwnedSizes(ctx, ci)
	if err != nil {
		return CollSizes{}, err
	}
	return totalSizes(c, per), nil
}

// DocCount is count's fast path: the documents of the partitions each shard owns (the
// sharding manager's count, which leaves out the data of moves in flight), every node
// counting its own shards.
func (r *Router) DocCount(ctx context.Context, ci *catalog.Coll) (int64, error) {
	n := r.mgr.OwnedDocCount(ci) // another node's shard counts nothing here
	if r.nodes == nil || !r.SpansRemote(ci) {
		return n, nil
	}
	var mu sync.Mutex
	err := r.onStatsNodes(ctx, ci, "count", nil, func(reply bsoncore.Document) {
		c, _ := reply.Lookup("n").AsInt64OK()
		mu.Lock()
		n += c
		mu.Unlock()
	})
	return n, err
}

// remoteSizes asks every other node holding partitions of ci for its shards' sizes (of the
// partitions each owns), by shard.
func (r *Router) remoteSizes(ctx context.Context, ci *catalog.Coll) (map[int]*CollSizes, error) {
	out := map[int]*CollSizes{}
	var mu sync.Mutex
	err := r.onStatsNodes(ctx, ci, "sizes", nil, func(reply bsoncore.Document) {
		arr, _ := reply.Lookup("shards").ArrayOK()
		vals, _ := arr.Values()
		mu.Lock()
		defer mu.Unlock()
		for _, v := range vals {
			d, _ := v.DocumentOK()
			get := func(k string) int64 { n, _ := d.Lookup(k).AsInt64OK(); return n }
			s := &CollSizes{Count: get("count"), Size: get("size"), Storage: get("storage")}
			s.estimateIndexes(ci.Meta)
			out[int(get("shard"))] = s
		}
	})
	return out, err
}

// onStatsNodes sends _cleaveShardStats what (with the extra fields of add) to every other
// node holding partitions of ci, in parallel, and hands each reply to use; the first
// failure, in shard order, is returned.
func (r *Router) onStatsNodes(ctx context.Context, ci *catalog.Coll, what string, add func(*bsoncore.DocumentBuilder),
	use func(bsoncore.Document),
) error {
	if r.nodes == nil {
		return nil
	}
	b := bsoncore.NewDocumentBuilder().
		AppendString("_cleaveShardStats", ci.Meta.Name).
		AppendInt64("collId", int64(ci.Meta.ID)).
		AppendInt64("rev", r.cat.Store().Revision()).
		AppendString("what", what)
	if add != nil {
		add(b)
	}
	return r.cat.Broadcast(ctx, r.nodes, ci, b.AppendString("$db", ci.Meta.DB).Build(), use)
}

// RemoteValidate merges the other nodes' validation of ci into res.
func (r *Router) RemoteValidate(ctx context.Context, ci *catalog.Coll, full bool, res *validate.Result) error {
	var mu sync.Mutex
	return r.onStatsNodes(ctx, ci, "validate", func(b *bsoncore.DocumentBuilder) { b.AppendBoolean("full", full) },
		func(reply bsoncore.Document) {
			mu.Lock()
			defer mu.Unlock()
			mergeValidate(res, reply)
		})
}

// mergeValidate adds a node's validation (appendNodeValidate) to res.
func mergeValidate(res *validate.Result, reply bsoncore.Document) {
	n, _ := reply.Lookup("records").AsInt64OK()
	bad, _ := reply.Lookup("invalid").AsInt64OK()
	res.Records += n
	res.InvalidDocuments += bad
	arr, _ := reply.Lookup("indexes").ArrayOK()
	vals, _ := arr.Values()
	for _, v := range vals {
		d, _ := v.DocumentOK()
		name, _ := d.Lookup("name").StringValueOK()
		for i := range res.Indexes {
			if ir := &res.Indexes[i]; ir.Name == name {
				k, _ := d.Lookup("keys").AsInt64OK()
				m, _ := d.Lookup("missing").AsInt64OK()
				x, _ := d.Lookup("extra").AsInt64OK()
				ir.Keys, ir.Missing, ir.Extra = ir.Keys+k, ir.Missing+m, ir.Extra+x
			}
		}
	}
	res.ExtraEntries = append(res.ExtraEntries, entriesOf(reply.Lookup("extraIndexEntries"))...)
	res.MissingEntries = append(res.MissingEntries, entriesOf(reply.Lookup("missingIndexEntries"))...)
	res.Warnings = append(res.Warnings, stringsOf(reply.Lookup("warnings"))...)
	res.Errors = append(res.Errors, stringsOf(reply.Lookup("errors"))...)
}

// entriesOf decodes the index entries appendEntries wrote.
func entriesOf(v bsoncore.Value) []validate.Entry {
	arr, _ := v.ArrayOK()
	vals, _ := arr.Values()
	var out []validate.Entry
	for _, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			continue
		}
		e := validate.Entry{ID: d.Lookup("recordId")}
		e.Index, _ = d.Lookup("indexName").StringValueOK()
		shardName, _ := d.Lookup("shard").StringValueOK()
		e.Shard, _ = strconv.Atoi(strings.TrimPrefix(shardName, "shard-"))
		h, _ := d.Lookup("hash").Int64OK()
		e.Hash = uint64(h)
		if key, ok := d.Lookup("indexKey").DocumentOK(); ok {
			e.Key = key
		} else if _, raw, ok := d.Lookup("indexKey").BinaryOK(); ok {
			e.RawKey = raw
		}
		out = append(out, e)
	}
	return out
}

// stringsOf returns the strings of an array value.
func stringsOf(v bsoncore.Value) []string {
	arr, _ := v.ArrayOK()
	vals, _ := arr.Values()
	var out []string
	for _, x := range vals {
		if s, ok := x.StringValueOK(); ok {
			out = append(out, s)
		}
	}
	return out
}

// AppendEntries appends an array field of index entries as MongoDB describes them
// ({indexName, recordId, indexKey}), with cleave's place of the entry: the shard, the
// partitioning hash and the _id (cleave's record id).
func AppendEntries(out []byte, key string, es []validate.Entry) []byte {
	aidx, out := bsoncore.AppendArrayElementStart(out, key)
	for i, e := range es {
		var didx int32
		didx, out = bsoncore.AppendDocumentElementStart(out, strconv.Itoa(i))
		out = bsoncore.AppendStringElement(out, "indexName", e.Index)
		if e.ID.Type != 0 {
			out = bsoncore.AppendValueElement(out, "recordId", e.ID)
		}
		if e.Key != nil {
			out = bsoncore.AppendDocumentElement(out, "indexKey", e.Key)
		} else {
			out = bsoncore.AppendBinaryElement(out, "indexKey", 0, e.RawKey)
		}
		out = bsoncore.AppendStringElement(out, "shard", "shard-"+strconv.Itoa(e.Shard))
		out = bsoncore.AppendInt64Element(out, "hash", int64(e.Hash))
		out, _ = bsoncore.AppendDocumentEnd(out, didx)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return out
}

// AppendStrings appends an array field of strings.
func AppendStrings(out []byte, key string, ss []string) []byte {
	aidx, out := bsoncore.AppendArrayElementStart(out, key)
	for i, s := range ss {
		out = bsoncore.AppendStringElement(out, strconv.Itoa(i), s)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return out
}
