package exec

import (
	"github.com/cleavedb/cleave/exec/args"

	"github.com/cleavedb/cleave/exec/catalog"

	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addIndexCommands registers createIndexes, listIndexes and dropIndexes.
func (e *Executor) addIndexCommands(add func(*command, ...string)) {
	add(&command{run: e.createIndexes, help: "create indexes on a collection"}, "createIndexes")
	add(&command{run: e.listIndexes, help: "list the indexes of a collection"}, "listIndexes")
	add(&command{run: e.dropIndexes, help: "drop indexes of a collection"}, "dropIndexes", "deleteIndexes")
}

// createIndexesArgs are the parsed arguments of createIndexes.
type createIndexesArgs struct {
	coll    string
	indexes []store.Index
}

// parseCreateIndexes parses and validates a createIndexes command.
func parseCreateIndexes(body bsoncore.Document) (*createIndexesArgs, error) {
	const cmd = "createIndexes"
	first, _ := bsonx.FirstElement(body)
	name, err := collectionArg(cmd, first.Value())
	if err != nil {
		return nil, err
	}
	a := &createIndexesArgs{coll: name}
	var specs bsoncore.Array
	ignoreUnknown := false
	err = args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "indexes":
			specs, err = args.Array(cmd, key, v)
		case "ignoreUnknownIndexOptions":
			ignoreUnknown, err = args.Bool(cmd, key, v)
		case "commitQuorum", "isTimeseriesNamespace", "returnOnStart":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if specs == nil {
		return nil, args.Missing(cmd, "indexes")
	}
	vals, _ := specs.Values()
	if len(vals) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one index to create")
	}
	for _, v := range vals {
		x, err := parseIndexSpec(v, ignoreUnknown)
		if err != nil {
			return nil, err
		}
		a.indexes = append(a.indexes, x)
	}
	return a, nil
}

// createIndexes runs createIndexes: it creates the collection if needed, resolves each
// requested index against the existing ones (identical: nothing to do; conflicting: an
// error, before anything changes), then builds the new ones over the existing data.
func (e *Executor) createIndexes(ctx context.Context, r *request) error {
	a, err := parseCreateIndexes(r.body)
	if err != nil {
		return err
	}
	if err := catalog.ValidateCollName(r.db, a.coll); err != nil {
		return err
	}
	unlock := e.cat.LockDDL()
	defer unlock()
	c := e.st.Catalog.State().Collection(r.db, a.coll)
	var existing []store.Index
	if c != nil {
		existing = c.Indexes
	} else {
		existing = []store.Index{{Name: store.IDIndexName, Key: idKeyPattern}}
	}
	todo, err := resolveIndexes(a.indexes, existing)
	if err != nil {
		return err
	}
	created := false
	if c == nil {
		c, err = e.st.Catalog.CreateCollection(store.Collection{DB: r.db, Name: a.coll})
		if errors.Is(err, store.ErrExists) { // an insert created it meanwhile
			c, err = e.st.Catalog.State().Collection(r.db, a.coll), nil
		}
		if err != nil || c == nil {
			return catalog.ChangeError(err, r.db, a.coll)
		}
		created = true
	}
	before := len(c.Indexes)
	if len(todo) > 0 {
		if err := e.buildIndexes(ctx, c, todo); err != nil {
			return err
		}
	}
	out := bsoncore.AppendInt32Element(r.out, "numIndexesBefore", int32(before))
	out = bsoncore.AppendInt32Element(out, "numIndexesAfter", int32(before+len(todo)))
	out = bsoncore.AppendBooleanElement(out, "createdCollectionAutomatically", created)
	if len(todo) == 0 {
		out = bsoncore.AppendStringElement(out, "note", "all indexes already exist")
	}
	r.out = out
	return nil
}

// idKeyPattern is {_id: 1}.
var idKeyPattern = bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()

// resolveIndexes returns the requested indexes that do not exist yet, or MongoDB's error
// for one that conflicts with an existing index or an earlier one of the same request.
func resolveIndexes(req, existing []store.Index) ([]store.Index, error) {
	var todo []store.Index
	for i := range req {
		x := &req[i]
		dup := false
		for _, group := range [][]store.Index{existing, todo} {
			for j := range group {
				skip, err := indexConflict(x, &group[j])
				if err != nil {
					return nil, err
				}
				dup = dup || skip
			}
		}
		if !dup {
			todo = append(todo, *x)
		}
	}
	return todo, nil
}

// indexConflict compares requested index req with index old: it reports true when req is
// identical to old (nothing to build), or returns MongoDB's conflict error.
func indexConflict(req, old *store.Index) (bool, error) {
	cmp := compareIndexes(req, old)
	if req.Name == old.Name {
		switch cmp {
		case indexIdentical:
			return true, nil
		case indexEquivalent:
			return false, mongoerr.New(mongoerr.IndexOptionsConflict,
				"An equivalent index already exists with the same name but different options. Requested index: %s, existing index: %s",
				specString(req), specString(old))
		default:
			return false, mongoerr.New(mongoerr.IndexKeySpecsConflict,
				"An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s",
				specString(req), specString(old))
		}
	}
	switch cmp {
	case indexIdentical:
		return false, mongoerr.New(mongoerr.IndexOptionsConflict, "Index already exists with a different name: %s", old.Name)
	case indexEquivalent:
		return false, mongoerr.New(mongoerr.IndexOptionsConflict,
			"An equivalent index already exists with a different name and options. Requested index: %s, existing index: %s",
			specString(req), specString(old))
	}
	return false, nil
}

// specString formats an index spec as MongoDB's messages print it.
func specString(x *store.Index) string {
	return bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: indexSpecDoc(x)})
}

// buildIndexes adds todo to collection c and fills them from the existing documents. The
// indexes enter the catalog not ready: the planner ignores them while writers maintain them
// (collInfo.writeIndexes). After a barrier, every write still to come maintains them, so the
// build only has to index the documents of a snapshot taken then (index_build.go). On
// failure (a duplicate key), the indexes and their entries are removed.
func (e *Executor) buildIndexes(ctx context.Context, c *store.Collection, todo []store.Index) error {
	var ids []store.IndexID
	db, name := c.DB, c.Name
	c, err := e.st.Catalog.UpdateCollection(db, name, func(c *store.Collection) error {
		for _, x := range todo {
			if c.NextIndexID == 0 {
				c.NextIndexID = store.IDIndexID + 1
			}
			x.ID, x.Ready = c.NextIndexID, false
			c.NextIndexID++
			ids = append(ids, x.ID)
			c.Indexes = append(c.Indexes, x)
		}
		return nil
	})
	if err != nil {
		return catalog.ChangeError(err, db, name)
	}
	e.cat.Barrier()
	if err := e.fillIndexes(ctx, c, ids); err != nil {
		e.abortIndexes(c, ids)
		return err
	}
	_, err = e.st.Catalog.UpdateCollection(c.DB, c.Name, func(c *store.Collection) error {
		for i := range c.Indexes {
			if containsID(ids, c.Indexes[i].ID) {
				c.Indexes[i].Ready = true
			}
		}
		return nil
	})
	if err != nil {
		e.abortIndexes(c, ids)
		return catalog.ChangeError(err, c.DB, c.Name)
	}
	for _, x := range todo {
		e.log.Info("index built", zap.String("ns", c.DB+"."+c.Name), zap.String("index", x.Name))
	}
	return nil
}

// abortIndexes removes the unfinished indexes ids of c from the catalog and deletes their
// entries on every shard.
func (e *Executor) abortIndexes(c *store.Collection, ids []store.IndexID) {
	_, err := e.st.Catalog.UpdateCollection(c.DB, c.Name, func(c *store.Collection) error {
		kept := c.Indexes[:0]
		for _, x := range c.Indexes {
			if !containsID(ids, x.ID) {
				kept = append(kept, x)
			}
		}
		c.Indexes = kept
		return nil
	})
	if err != nil {
		e.log.Error("cannot remove a failed index build from the catalog", zap.String("ns", c.DB+"."+c.Name), zap.Error(err))
		return
	}
	e.deleteIndexData(c, ids)
}

// deleteIndexData deletes the entries of indexes ids of c on every shard, once the writers
// that may still maintain them are done.
func (e *Executor) deleteIndexData(c *store.Collection, ids []store.IndexID) {
	e.cat.Barrier()
	for s, db := range e.st.Shards {
		b := db.NewBatch()
		for _, id := range ids {
			b.DeleteIndexData(c.ID, id)
		}
		if err := b.Commit(true); err != nil {
			e.log.Error("cannot delete index entries", zap.String("ns", c.DB+"."+c.Name), zap.Int("shard", s), zap.Error(err))
		}
		b.Close()
	}
}

// containsID reports whether ids holds id.
func containsID(ids []store.IndexID, id store.IndexID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
