package colls

import (
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// collStats runs collStats: {ns, size, count, avgObjSize, storageSize, nindexes,
// totalIndexSize, totalSize, indexSizes, scaleFactor, sharded}. A missing collection
// reports zeros in mongod's shape for it (appendMissingStorageFields), as MongoDB 7.0 does.
func (h *Handlers) collStats(ctx context.Context, r *command.Request) error {
	const cmd = "collStats"
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.Collection(cmd, first.Value())
	if err != nil {
		return err
	}
	scale, err := scaleArg(cmd, r.Body)
	if err != nil {
		return err
	}
	c := h.Storage.Catalog.State().Collection(r.DB, name)
	if catalog.IsView(c) {
		return catalog.ViewError(r.DB + "." + name)
	}
	var s route.CollSizes
	if c != nil {
		if s, err = h.Route.ClusterCollSizes(ctx, c); err != nil {
			return err
		}
	}
	out := r.Out
	out = bsoncore.AppendBooleanElement(out, "sharded", c != nil && c.Sharded())
	out = bsoncore.AppendStringElement(out, "ns", r.DB+"."+name)
	if c == nil {
		r.Out = appendMissingStorageFields(out, scale)
		return nil
	}
	r.Out = route.AppendStorageFields(out, &s, c, scale)
	return nil
}

// appendMissingStorageFields appends the storage statistics of a collection that does not
// exist, in the shape mongod's appendCollectionStorageStats gives them: zeros (ints),
// empty indexDetails and indexSizes, the scale, and no freeStorageSize, avgObjSize or
// capped.
func appendMissingStorageFields(out []byte, scale int64) []byte {
	for _, k := range []string{"size", "count", "numOrphanDocs", "storageSize", "totalSize", "nindexes", "totalIndexSize"} {
		out = bsoncore.AppendInt32Element(out, k, 0)
	}
	out = bsoncore.AppendDocumentElement(out, "indexDetails", bsoncore.NewDocumentBuilder().Build())
	out = bsoncore.AppendDocumentElement(out, "indexSizes", bsoncore.NewDocumentBuilder().Build())
	return bsonx.AppendNumber(out, "scaleFactor", scale)
}

// dbStats runs dbStats: {db, collections, views, objects, avgObjSize, dataSize,
// storageSize, indexes, indexSize, totalSize, scaleFactor}.
func (h *Handlers) dbStats(ctx context.Context, r *command.Request) error {
	const cmd = "dbStats"
	scale, err := scaleArg(cmd, r.Body)
	if err != nil {
		return err
	}
	var objects, data, storage, indexes, indexSize, views int64
	var colls []*store.Collection
	for _, c := range h.Storage.Catalog.State().Collections(r.DB) {
		if catalog.IsView(c) {
			views++
			continue
		}
		colls = append(colls, c)
		s, err := h.Route.ClusterCollSizes(ctx, c)
		if err != nil {
			return err
		}
		objects += s.Count
		data += s.Size
		storage += s.Storage
		indexes += int64(len(s.Indexes))
		indexSize += s.Disk() - s.Storage
	}
	// Counts are longs and sizes doubles, as mongos answers dbStats.
	out := bsoncore.AppendStringElement(r.Out, "db", r.DB)
	out = bsoncore.AppendInt64Element(out, "collections", int64(len(colls)))
	out = bsoncore.AppendInt64Element(out, "views", views)
	out = bsoncore.AppendInt64Element(out, "objects", objects)
	avg := 0.0
	if objects > 0 {
		avg = float64(data) / float64(objects)
	}
	out = bsoncore.AppendDoubleElement(out, "avgObjSize", avg)
	out = bsoncore.AppendDoubleElement(out, "dataSize", float64(data)/float64(scale))
	out = bsoncore.AppendDoubleElement(out, "storageSize", float64(storage)/float64(scale))
	if freeStorageArg(r.Body) {
		// Pebble reclaims space by compaction: no free-list space is held for reuse.
		out = bsoncore.AppendDoubleElement(out, "freeStorageSize", 0)
	}
	out = bsoncore.AppendInt64Element(out, "indexes", indexes)
	out = bsoncore.AppendDoubleElement(out, "indexSize", float64(indexSize)/float64(scale))
	if freeStorageArg(r.Body) {
		out = bsoncore.AppendDoubleElement(out, "indexFreeStorageSize", 0)
	}
	out = bsoncore.AppendDoubleElement(out, "totalSize", float64(storage+indexSize)/float64(scale))
	if freeStorageArg(r.Body) {
		out = bsoncore.AppendDoubleElement(out, "totalFreeStorageSize", 0)
	}
	out = bsoncore.AppendInt64Element(out, "scaleFactor", scale)
	r.Out = out
	return nil
}

// freeStorageArg reports dbStats' freeStorage: a true value asks for the free-space sizes.
func freeStorageArg(body bsoncore.Document) bool {
	v, err := body.LookupErr("freeStorage")
	if err != nil {
		return false
	}
	if n, ok := bsonx.NumberAsFloat64(v); ok {
		return n != 0
	}
	b, ok := v.BooleanOK()
	return ok && b
}

// scaleArg reads the scale argument of collStats and dbStats (1 when absent).
func scaleArg(cmd string, body bsoncore.Document) (int64, error) {
	scale := int64(1)
	err := args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		switch key {
		case "scale":
			n, err := args.Int64(cmd, key, v)
			if err != nil {
				return true, err
			}
			if n < 1 {
				return true, mongoerr.New(mongoerr.Location51024, "BSON field 'scale' value must be >= 1, actual value '%d'", n)
			}
			scale = n
		case "verbose", "freeStorage":
		default:
			return false, nil
		}
		return true, nil
	})
	return scale, err
}

// dataSize answers {dataSize: "db.coll"}: the collection's documents and bytes, summed over
// its shards' statistics ({size, numObjects, millis}). With a key range (keyPattern, min,
// max) it measures the documents in the range (datasize.go).
func (h *Handlers) dataSize(ctx context.Context, r *command.Request) error {
	const cmd = "dataSize"
	start := time.Now()
	first, _ := bsonx.FirstElement(r.Body)
	ns, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	rng, err := parseDataSizeRange(r.Body)
	if err != nil {
		return err
	}
	db, coll, ok := strings.Cut(ns, ".")
	if !ok || db == "" || coll == "" {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	var docs, bytes int64
	if c := h.Storage.Catalog.State().Collection(db, coll); c != nil {
		s, err := h.Route.ClusterCollSizes(ctx, c)
		if err != nil {
			return err
		}
		docs, bytes = s.Count, s.Size
	}
	if !empty(rng.keyPattern) || !empty(rng.min) || !empty(rng.max) || rng.estimate {
		ci, err := h.Cat.Lookup(db, coll)
		if err != nil {
			return err
		}
		return h.dataSizeOfRange(ctx, r, ci, rng, docs, bytes, start)
	}
	out := bsoncore.AppendInt64Element(r.Out, "size", bytes)
	out = bsoncore.AppendInt64Element(out, "numObjects", docs)
	r.Out = bsoncore.AppendInt64Element(out, "millis", time.Since(start).Milliseconds())
	return nil
}
