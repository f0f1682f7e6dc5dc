package colls

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/vecindex"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Search index management: createSearchIndexes, updateSearchIndex and dropSearchIndex (and
// crud's $listSearchIndexes stage) keep a collection's search indexes in its catalog record,
// so that they survive restarts and reach every node. cleave builds indexes of type
// "vectorSearch" (exec/vecindex); an Atlas Search index (type "search", full-text) answers
// NotImplemented. A spec without a type whose definition is a vectorSearch definition is one.
// Replies are MongoDB 8.2's: {indexesCreated: [{id, name}], ok: 1}, and {ok: 1}.

// addSearchIndexCommands registers the search index commands.
func (h *Handlers) addSearchIndexCommands(add func(*command.Command)) {
	add(&command.Command{Name: "createSearchIndexes", Run: h.createSearchIndexes, Action: auth.ActionDDL, Help: "Command to create a search index.", Props: command.APIV1})
	add(&command.Command{Name: "updateSearchIndex", Run: h.updateSearchIndex, Action: auth.ActionDDL, Help: "Command to update a search index.", Props: command.APIV1})
	add(&command.Command{Name: "dropSearchIndex", Run: h.dropSearchIndex, Action: auth.ActionDDL, Help: "Command to drop a search index.", Props: command.APIV1})
}

// createSearchIndexes runs {createSearchIndexes: <coll>, indexes: [{name?, type?,
// definition}]}.
func (h *Handlers) createSearchIndexes(ctx context.Context, r *command.Request) error {
	const cmd = "createSearchIndexes"
	coll, err := searchIndexCollection(cmd, r.Body)
	if err != nil {
		return err
	}
	var indexes bsoncore.Array
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "indexes" {
			return false, nil
		}
		var err error
		indexes, err = args.Array(cmd, key, v)
		return true, err
	})
	if err != nil {
		return err
	}
	if indexes == nil {
		return args.Missing(cmd, "indexes")
	}
	var recs []vecindex.Record
	vals, _ := indexes.Values()
	for _, v := range vals {
		spec, ok := v.DocumentOK()
		if !ok {
			return args.WrongType(cmd, "indexes", v.Type, "object")
		}
		rec, err := parseSearchIndexSpec(cmd+".indexes", spec)
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	unlock, err := h.LockDDL(ctx, cmd, r.Body)
	if err != nil {
		return err
	}
	defer unlock()
	_, err = h.Storage.Catalog.UpdateCollection(r.DB, coll, func(c *store.Collection) error {
		return addSearchIndexes(c, recs)
	})
	if err != nil {
		return searchIndexError(err, r.DB, coll)
	}
	h.Log.Info(cmd, zap.String("ns", r.DB+"."+coll), zap.Int("indexes", len(recs)))
	aidx, out := bsoncore.AppendArrayElementStart(r.Out, "indexesCreated")
	for i, rec := range recs {
		out = bsoncore.AppendDocumentElement(out, bsonx.ArrayKey(i), bsoncore.NewDocumentBuilder().
			AppendString("id", rec.ID).AppendString("name", rec.Name).Build())
	}
	r.Out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return nil
}

// addSearchIndexes adds recs to c, refusing a name c (or recs) already holds.
func addSearchIndexes(c *store.Collection, recs []vecindex.Record) error {
	if catalog.IsView(c) {
		return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s.%s is a view, not a collection", c.DB, c.Name)
	}
	for _, rec := range recs {
		if _, ok := vecindex.Find(c, rec.Name); ok {
			return mongoerr.New(mongoerr.IndexAlreadyExists, "Index %s already exists.", rec.Name)
		}
		c.SearchIndexes = append(c.SearchIndexes, rec.Encode())
	}
	return nil
}

// parseSearchIndexSpec checks one SearchIndexSpec {name?, type?, definition} and returns it
// as a new record.
func parseSearchIndexSpec(ctx string, spec bsoncore.Document) (vecindex.Record, error) {
	rec := vecindex.Record{ID: vecindex.NewID(), Name: "default"}
	elems, _ := spec.Elements()
	for _, el := range elems {
		v := el.Value()
		var err error
		switch el.Key() {
		case "name":
			rec.Name, err = args.String(ctx, el.Key(), v)
		case "type":
			rec.Type, err = args.String(ctx, el.Key(), v)
		case "definition":
			rec.Definition, err = args.Doc(ctx, el.Key(), v)
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", ctx, el.Key())
		}
		if err != nil {
			return rec, err
		}
	}
	if rec.Definition == nil {
		return rec, args.Missing(ctx, "definition")
	}
	return rec, checkSearchDefinition(&rec)
}

// checkSearchDefinition checks rec's type and definition; a spec without a type is a
// vectorSearch index when its definition is one.
func checkSearchDefinition(rec *vecindex.Record) error {
	switch rec.Type {
	case "":
		if _, err := rec.Def(); err == nil {
			rec.Type = vecindex.TypeVectorSearch
			return nil
		}
		fallthrough
	case "search":
		return mongoerr.New(mongoerr.NotImplemented, "Atlas Search indexes (type \"search\") are not supported by cleave; vector search indexes (type \"vectorSearch\") are")
	case vecindex.TypeVectorSearch:
		_, err := rec.Def()
		return err
	}
	return mongoerr.New(mongoerr.BadValue, "Invalid search index type: %s; must be one of [search, vectorSearch]", rec.Type)
}

// updateSearchIndex runs {updateSearchIndex: <coll>, id?, name?, definition}: the index's
// definition is replaced, its graphs built again at the next search.
func (h *Handlers) updateSearchIndex(ctx context.Context, r *command.Request) error {
	const cmd = "updateSearchIndex"
	coll, err := searchIndexCollection(cmd, r.Body)
	if err != nil {
		return err
	}
	var id, name string
	var def bsoncore.Document
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "id":
			id, err = args.String(cmd, key, v)
		case "name":
			name, err = args.String(cmd, key, v)
		case "definition":
			def, err = args.Doc(cmd, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	if def == nil {
		return args.Missing(cmd, "definition")
	}
	if err := checkSearchIndexTarget(id, name); err != nil {
		return err
	}
	unlock, err := h.LockDDL(ctx, cmd, r.Body)
	if err != nil {
		return err
	}
	defer unlock()
	var changed vecindex.Record
	sameGraph := false
	c, err := h.Storage.Catalog.UpdateCollection(r.DB, coll, func(c *store.Collection) error {
		i, err := searchIndexAt(c, id, name)
		if err != nil {
			return err
		}
		rec := vecindex.Records(c)[i]
		sameGraph = vecindex.SameGraph(rec.Definition, def)
		rec.Definition = def
		if err := checkSearchDefinition(&rec); err != nil {
			return err
		}
		c.SearchIndexes[i], changed = rec.Encode(), rec
		return nil
	})
	if err != nil {
		return searchIndexError(err, r.DB, coll)
	}
	h.Vectors.Forget(c.ID, changed.Name, sameGraph) // a change of quantization only reloads the graphs
	h.Log.Info(cmd, zap.String("ns", r.DB+"."+coll), zap.String("index", changed.Name))
	return nil
}

// dropSearchIndex runs {dropSearchIndex: <coll>, id?, name?}.
func (h *Handlers) dropSearchIndex(ctx context.Context, r *command.Request) error {
	const cmd = "dropSearchIndex"
	coll, err := searchIndexCollection(cmd, r.Body)
	if err != nil {
		return err
	}
	var id, name string
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "id":
			id, err = args.String(cmd, key, v)
		case "name":
			name, err = args.String(cmd, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	if err := checkSearchIndexTarget(id, name); err != nil {
		return err
	}
	unlock, err := h.LockDDL(ctx, cmd, r.Body)
	if err != nil {
		return err
	}
	defer unlock()
	var dropped string
	c, err := h.Storage.Catalog.UpdateCollection(r.DB, coll, func(c *store.Collection) error {
		i, err := searchIndexAt(c, id, name)
		if err != nil {
			return err
		}
		dropped = vecindex.Records(c)[i].Name
		c.SearchIndexes = append(c.SearchIndexes[:i:i], c.SearchIndexes[i+1:]...)
		if len(c.SearchIndexes) == 0 {
			c.SearchIndexes = nil
		}
		return nil
	})
	if err != nil {
		return searchIndexError(err, r.DB, coll)
	}
	h.Vectors.Forget(c.ID, dropped, false)
	h.Log.Info(cmd, zap.String("ns", r.DB+"."+coll), zap.String("index", dropped))
	return nil
}

// checkSearchIndexTarget requires exactly one of id and name.
func checkSearchIndexTarget(id, name string) error {
	switch {
	case id != "" && name != "":
		return mongoerr.New(mongoerr.InvalidOptions, "Cannot set both 'name' and 'indexID'.")
	case id == "" && name == "":
		return mongoerr.New(mongoerr.InvalidOptions, "Must set either 'name' or 'indexID'.")
	}
	return nil
}

// searchIndexAt returns the position in c of the search index with id or name.
func searchIndexAt(c *store.Collection, id, name string) (int, error) {
	for i, rec := range vecindex.Records(c) {
		if id != "" && rec.ID == id || name != "" && rec.Name == name {
			return i, nil
		}
	}
	what := name
	if id != "" {
		what = id
	}
	return 0, mongoerr.New(mongoerr.IndexNotFound, "Index %s not found.", what)
}

// searchIndexError maps a catalog failure: a missing collection is NamespaceNotFound.
func searchIndexError(err error, db, coll string) error {
	return catalog.ChangeError(err, db, coll)
}

// searchIndexCollection validates the collection name a search index command starts with.
func searchIndexCollection(cmd string, body bsoncore.Document) (string, error) {
	first, _ := bsonx.FirstElement(body)
	return args.Collection(cmd, first.Value())
}
