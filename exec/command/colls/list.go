package colls

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/store"
)

// listDatabases runs listDatabases (admin only): every database that has collections, with
// its size, as {databases: [{name, sizeOnDisk, empty}], totalSize, totalSizeMb}.
func (h *Handlers) listDatabases(ctx context.Context, r *command.Request) error {
	const cmd = "listDatabases"
	var filter *match.Filter
	nameOnly := false
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "filter":
			var d bsoncore.Document
			if d, err = args.OptionalDoc(cmd, key, v); err == nil && d != nil {
				filter, err = query.CompileFilter(d)
			}
		case "nameOnly":
			nameOnly, err = args.Bool(cmd, key, v)
		case "authorizedDatabases":
			_, err = args.Bool(cmd, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	state := h.Storage.Catalog.State()
	var total int64
	aidx, out := bsoncore.AppendArrayElementStart(r.Out, "databases")
	n := 0
	for _, db := range state.Databases() {
		colls := state.Collections(db.Name)
		if len(colls) == 0 {
			continue // MongoDB forgets a database with its last collection
		}
		var size int64
		for _, c := range colls {
			sz, err := h.Route.ClusterCollSizes(ctx, c)
			if err != nil {
				return err
			}
			size += sz.Disk()
		}
		didx, entry := bsoncore.AppendDocumentStart(nil)
		entry = bsoncore.AppendStringElement(entry, "name", db.Name)
		if !nameOnly {
			entry = bsoncore.AppendInt64Element(entry, "sizeOnDisk", size)
			entry = bsoncore.AppendBooleanElement(entry, "empty", size == 0)
		}
		entry, _ = bsoncore.AppendDocumentEnd(entry, didx)
		if filter != nil && !filter.Match(entry) {
			continue
		}
		total += size
		out = bsoncore.AppendDocumentElement(out, strconv.Itoa(n), entry)
		n++
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	if !nameOnly {
		out = bsoncore.AppendInt64Element(out, "totalSize", total)
		out = bsoncore.AppendInt64Element(out, "totalSizeMb", total>>20)
	}
	r.Out = out
	return nil
}

// listCollections runs listCollections: a cursor over the collections of r.DB, each as
// {name, type, options, info: {readOnly, uuid}, idIndex}, or {name, type} with nameOnly.
func (h *Handlers) listCollections(ctx context.Context, r *command.Request) error {
	const cmd = "listCollections"
	var filter *match.Filter
	batchSize := int64(-1)
	nameOnly := false
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "filter":
			var d bsoncore.Document
			if d, err = args.OptionalDoc(cmd, key, v); err == nil && d != nil {
				filter, err = query.CompileFilter(d)
			}
		case "nameOnly":
			nameOnly, err = args.Bool(cmd, key, v)
		case "authorizedCollections", "includePendingDrops":
			_, err = args.Bool(cmd, key, v)
		case "cursor":
			batchSize, err = command.ParseCursorOption(cmd, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	var docs []bsoncore.Document
	for _, c := range h.Storage.Catalog.State().Collections(r.DB) {
		if h.Txns.Hidden(r.Txn, c.DB, c.Name) {
			continue
		}
		full := collectionEntry(c, false)
		if filter != nil && !filter.Match(full) {
			continue
		}
		if nameOnly {
			full = collectionEntry(c, true)
		}
		docs = append(docs, full)
	}
	return h.ListingCursor(ctx, r, r.DB+".$cmd.listCollections", docs, batchSize)
}

// collectionEntry is a collection as listCollections describes it. A time-series
// collection has type "timeseries" and no uuid or idIndex, a clustered one no idIndex, as
// in MongoDB 7.0.
func collectionEntry(c *store.Collection, nameOnly bool) bsoncore.Document {
	ts := catalog.IsTimeseries(c)
	view := catalog.IsView(c)
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = bsoncore.AppendStringElement(d, "name", c.Name)
	switch {
	case view:
		d = bsoncore.AppendStringElement(d, "type", "view")
	case ts:
		d = bsoncore.AppendStringElement(d, "type", "timeseries")
	default:
		d = bsoncore.AppendStringElement(d, "type", "collection")
	}
	if nameOnly {
		d, _ = bsoncore.AppendDocumentEnd(d, idx)
		return d
	}
	opts := c.Options
	if opts == nil {
		opts = query.EmptyDoc
	}
	d = bsoncore.AppendDocumentElement(d, "options", opts)
	if view { // MongoDB 7.0: {name, type: "view", options: {viewOn, pipeline}, info: {readOnly: true}}
		iidx, d := bsoncore.AppendDocumentElementStart(d, "info")
		d = bsoncore.AppendBooleanElement(d, "readOnly", true)
		d, _ = bsoncore.AppendDocumentEnd(d, iidx)
		d, _ = bsoncore.AppendDocumentEnd(d, idx)
		return d
	}
	iidx, d := bsoncore.AppendDocumentElementStart(d, "info")
	d = bsoncore.AppendBooleanElement(d, "readOnly", false)
	if !ts {
		d = bsoncore.AppendBinaryElement(d, "uuid", 4, c.UUID[:])
	}
	d, _ = bsoncore.AppendDocumentEnd(d, iidx)
	if x := c.Index(store.IDIndexName); x != nil && !ts && catalog.ClusteredOf(c.Options) == nil {
		d = bsoncore.AppendDocumentElement(d, "idIndex", catalog.IndexSpecDoc(x))
	}
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}
