package colls

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// listIndexes runs listIndexes: a cursor over the ready indexes of a collection, each as
// {v: 2, key, name, ...options}.
func (h *Handlers) listIndexes(ctx context.Context, r *command.Request) error {
	const cmd = "listIndexes"
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.Collection(cmd, first.Value())
	if err != nil {
		return err
	}
	batchSize := int64(-1)
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		switch key {
		case "cursor":
			var err error
			batchSize, err = command.ParseCursorOption(cmd, v)
			return true, err
		case "includeBuildUUIDs", "includeIndexBuildInfo":
			_, err := args.Bool(cmd, key, v)
			return true, err
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	ns := r.DB + "." + name
	c := h.Storage.Catalog.State().Collection(r.DB, name)
	if c != nil && h.Txns.Hidden(r.Txn, r.DB, name) {
		c = nil
	}
	if c == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", ns)
	}
	if catalog.IsView(c) {
		return catalog.ViewError(ns)
	}
	return h.ListingCursor(ctx, r, ns, listedIndexes(c), batchSize)
}

// listedIndexes are the specs listIndexes reports for c: its ready indexes, where a
// clustered collection shows its clustered index instead of _id_ and a time-series
// collection no _id index, as in MongoDB 7.0.
func listedIndexes(c *store.Collection) []bsoncore.Document {
	clustered, ts := catalog.ClusteredOf(c.Options), catalog.IsTimeseries(c)
	var docs []bsoncore.Document
	for i := range c.Indexes {
		x := &c.Indexes[i]
		switch {
		case !x.Ready:
		case x.Name == store.IDIndexName && clustered != nil:
			docs = append(docs, ddl.ClusteredListSpec(clustered))
		case x.Name == store.IDIndexName && ts:
		default:
			docs = append(docs, catalog.IndexSpecDoc(x))
		}
	}
	return docs
}

// dropIndexes runs dropIndexes: index is a name, a key pattern, "*" (all but _id_) or an
// array of names.
func (h *Handlers) dropIndexes(ctx context.Context, r *command.Request) error {
	const cmd = "dropIndexes"
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.Collection(cmd, first.Value())
	if err != nil {
		return err
	}
	var target bsoncore.Value
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "index" {
			return false, nil
		}
		switch v.Type {
		case bsoncore.TypeString, bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			target = v
			return true, nil
		}
		return true, mongoerr.New(mongoerr.TypeMismatch,
			"BSON field 'dropIndexes.index' is the wrong type '%s', %s", bsonx.TypeName(v.Type), args.Expected("string", "object", "array"))
	})
	if err != nil {
		return err
	}
	if target.Type == 0 {
		return args.Missing(cmd, "index")
	}
	unlock, err := h.LockDDL(ctx, "dropIndexes", r.Body)
	if err != nil {
		return err
	}
	defer unlock()
	c := h.Storage.Catalog.State().Collection(r.DB, name)
	if c == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s.%s", r.DB, name)
	}
	if catalog.IsView(c) {
		return catalog.ViewError(r.DB + "." + name)
	}
	ids, err := indexesToDrop(c, target)
	if err != nil {
		return err
	}
	was := len(c.Indexes)
	if len(ids) > 0 {
		_, err = h.Storage.Catalog.UpdateCollection(c.DB, c.Name, func(c *store.Collection) error {
			kept := c.Indexes[:0]
			for _, x := range c.Indexes {
				if !ddl.ContainsID(ids, x.ID) {
					kept = append(kept, x)
				}
			}
			c.Indexes = kept
			return nil
		})
		if err != nil {
			return catalog.ChangeError(err, r.DB, name)
		}
		h.DDL.DeleteIndexData(c, ids)
		h.recordIndexes(changes.OpDropIndexes, c, indexNames(c, ids))
		h.Log.Info("dropped indexes", zap.String("ns", r.DB+"."+name), zap.Int("count", len(ids)))
	}
	r.Out = bsoncore.AppendInt32Element(r.Out, "nIndexesWas", int32(was))
	return nil
}

// indexesToDrop resolves dropIndexes' index argument against collection c.
func indexesToDrop(c *store.Collection, target bsoncore.Value) ([]store.IndexID, error) {
	switch target.Type {
	case bsoncore.TypeString:
		name := target.StringValue()
		if name == "*" {
			var ids []store.IndexID
			for _, x := range c.Indexes {
				if x.Name != store.IDIndexName {
					ids = append(ids, x.ID)
				}
			}
			return ids, nil
		}
		id, err := indexByName(c, name)
		return []store.IndexID{id}, err
	case bsoncore.TypeEmbeddedDocument:
		key := target.Document()
		for _, x := range c.Indexes {
			if bsonx.CompareDocuments(x.Key, key) == 0 {
				if x.Name == store.IDIndexName {
					return nil, errCannotDropID()
				}
				return []store.IndexID{x.ID}, nil
			}
		}
		return nil, mongoerr.New(mongoerr.IndexNotFound, "can't find index with key: %s", bsonx.ShellString(target))
	}
	vals, _ := target.Array().Values()
	ids := make([]store.IndexID, 0, len(vals))
	for _, v := range vals {
		s, ok := v.StringValueOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "dropIndexes %s.%s (%s) failed to drop multiple indexes: index names must be strings", c.DB, c.Name, bsonx.ShellString(target))
		}
		id, err := indexByName(c, s)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// errCannotDropID is MongoDB's answer to dropping the _id index.
func errCannotDropID() error {
	return mongoerr.New(mongoerr.InvalidOptions, "cannot drop _id index")
}

// indexByName returns the ID of the index of c named name.
func indexByName(c *store.Collection, name string) (store.IndexID, error) {
	if name == store.IDIndexName {
		return 0, errCannotDropID()
	}
	x := c.Index(name)
	if x == nil {
		return 0, mongoerr.New(mongoerr.IndexNotFound, "index not found with name [%s]", name)
	}
	return x.ID, nil
}

// indexNames returns the names of the indexes ids of c.
func indexNames(c *store.Collection, ids []store.IndexID) []string {
	var names []string
	for _, x := range c.Indexes {
		if ddl.ContainsID(ids, x.ID) {
			names = append(names, x.Name)
		}
	}
	return names
}
