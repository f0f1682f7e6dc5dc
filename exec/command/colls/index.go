package colls

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addIndexCommands registers createIndexes, listIndexes and dropIndexes.
func (h *Handlers) addIndexCommands(add func(*command.Command)) {
	add(&command.Command{Name: "createIndexes", Run: h.createIndexes, Action: auth.ActionDDL, Help: "create indexes on a collection", Props: command.InTxn | command.TxnCreates | command.WriteConcern | command.APIV1})
	add(&command.Command{Name: "listIndexes", Run: h.listIndexes, Action: auth.ActionListing, Help: "list the indexes of a collection", Props: command.OpensCursor | command.APIV1})
	add(&command.Command{Name: "dropIndexes", Aliases: []string{"deleteIndexes"}, Run: h.dropIndexes, Action: auth.ActionDDL, Help: "drop indexes of a collection", Props: command.WriteConcern | command.APIV1})
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
	name, err := args.Collection(cmd, first.Value())
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
		x, err := ddl.ParseIndexSpec(v, ignoreUnknown)
		if err != nil {
			return nil, err
		}
		if _, err := v.Document().LookupErr("name"); err != nil {
			// ParseIndexSpec names such an index as drivers do; createIndexes requires the name.
			return nil, mongoerr.New(mongoerr.FailedToParse,
				"Error in specification %s :: caused by :: The 'name' field is a required property of an index specification", bsonx.ShellString(v))
		}
		a.indexes = append(a.indexes, x)
	}
	return a, nil
}

// createIndexes runs createIndexes (ensureIndexes) and answers MongoDB's counts.
func (h *Handlers) createIndexes(ctx context.Context, r *command.Request) error {
	a, err := parseCreateIndexes(r.Body)
	if err != nil {
		return err
	}
	res, err := h.ensureIndexes(ctx, r.DB, a.coll, a.indexes)
	if err != nil {
		return err
	}
	out := bsoncore.AppendInt32Element(r.Out, "numIndexesBefore", int32(res.before))
	out = bsoncore.AppendInt32Element(out, "numIndexesAfter", int32(res.after))
	out = bsoncore.AppendBooleanElement(out, "createdCollectionAutomatically", res.created)
	if res.before == res.after {
		out = bsoncore.AppendStringElement(out, "note", "all indexes already exist")
	}
	r.Out = out
	return nil
}

// ensureResult is what ensureIndexes did: index counts before and after, and whether it
// created the collection.
type ensureResult struct {
	before, after int
	created       bool
}

// ensureIndexes creates indexes on db.coll as createIndexes does: it creates the collection
// if needed, resolves each requested index against the existing ones (identical: nothing to
// do; conflicting: an error, before anything changes), then builds the new ones over the
// existing data. Cosmos DB's CreateCollection builds its indexes through it too.
func (h *Handlers) ensureIndexes(ctx context.Context, db, coll string, indexes []store.Index) (ensureResult, error) {
	if err := catalog.ValidateCollName(db, coll); err != nil {
		return ensureResult{}, err
	}
	unlock, err := h.LockDDL(ctx, "createIndexes", nil)
	if err != nil {
		return ensureResult{}, err
	}
	defer unlock()
	c := h.Storage.Catalog.State().Collection(db, coll)
	if catalog.IsView(c) {
		return ensureResult{}, catalog.ViewError(db + "." + coll)
	}
	var existing []store.Index
	var dflt bsoncore.Document // the collection's default collation, which indexes inherit
	if c != nil {
		dflt, _ = c.Options.Lookup("collation").DocumentOK()
	}
	for i := range indexes {
		ddl.ResolveIndexCollation(&indexes[i], dflt)
	}
	if c != nil {
		existing = c.Indexes
	} else {
		existing = []store.Index{{Name: store.IDIndexName, Key: idKeyPattern}}
	}
	todo, twice, err := resolveIndexes(indexes, existing)
	if err != nil {
		return ensureResult{}, err
	}
	if twice != "" {
		return ensureResult{}, h.duplicateIndexError(ctx, c, twice)
	}
	var res ensureResult
	if c == nil {
		c, err = h.Storage.Catalog.CreateCollection(store.Collection{DB: db, Name: coll})
		if errors.Is(err, store.ErrExists) { // an insert created it meanwhile
			c, err = h.Storage.Catalog.State().Collection(db, coll), nil
		}
		if err != nil || c == nil {
			return ensureResult{}, catalog.ChangeError(err, db, coll)
		}
		res.created = true
		h.RecordCreate(c)
	}
	res.before = len(c.Indexes)
	res.after = res.before + len(todo)
	if len(todo) > 0 {
		if err := h.DDL.Build(ctx, c, todo); err != nil {
			return ensureResult{}, err
		}
		names := make([]string, len(todo))
		for i := range todo {
			names[i] = todo[i].Name
		}
		h.recordIndexes(changes.OpCreateIndexes, h.Storage.Catalog.State().Collection(db, coll), names)
	}
	return res, nil
}

// idKeyPattern is {_id: 1}.
var idKeyPattern = bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()

// resolveIndexes returns the requested indexes that do not exist yet, or MongoDB's error
// for one that conflicts with an existing index or an earlier one of the same request. An
// index requested twice is no conflict but an error of its own: twice names it.
func resolveIndexes(req, existing []store.Index) (todo []store.Index, twice string, err error) {
	for i := range req {
		x := &req[i]
		dup := false
		for g, group := range [][]store.Index{existing, todo} {
			for j := range group {
				skip, err := indexConflict(x, &group[j])
				if err != nil {
					return nil, "", err
				}
				if skip && g == 1 {
					return nil, x.Name, nil
				}
				dup = dup || skip
			}
		}
		if !dup {
			todo = append(todo, *x)
		}
	}
	return todo, "", nil
}

// duplicateIndexError is MongoDB's error for index name requested twice in one createIndexes
// on collection c (nil: not created yet). On an empty collection mongod creates the indexes
// one by one and the second finds the first (IndexAlreadyExists); over documents the build
// refuses the pair (ddl.DuplicateBuildError).
func (h *Handlers) duplicateIndexError(ctx context.Context, c *store.Collection, name string) error {
	if c != nil {
		sz, err := h.Route.ClusterCollSizes(ctx, c)
		if err != nil {
			return err
		}
		if sz.Count > 0 {
			return ddl.DuplicateBuildError(c)
		}
	}
	return mongoerr.New(mongoerr.IndexAlreadyExists, "Identical index already exists: %s", name)
}

// indexConflict compares requested index req with index old: it reports true when req is
// identical to old (nothing to build), or returns MongoDB's conflict error.
func indexConflict(req, old *store.Index) (bool, error) {
	cmp := ddl.CompareIndexes(req, old)
	if req.Name == old.Name {
		switch cmp {
		case ddl.IndexIdentical:
			return true, nil
		case ddl.IndexEquivalent:
			return false, mongoerr.New(mongoerr.IndexOptionsConflict,
				"An equivalent index already exists with the same name but different options. Requested index: %s, existing index: %s",
				ddl.SpecString(req), ddl.SpecString(old))
		default:
			return false, mongoerr.New(mongoerr.IndexKeySpecsConflict,
				"An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s",
				ddl.SpecString(req), ddl.SpecString(old))
		}
	}
	if cmp != ddl.IndexIdentical && cmp != ddl.IndexEquivalent && catalog.IsText(req.Key) && catalog.IsText(old.Key) {
		return false, mongoerr.New(mongoerr.CannotCreateIndex, "only one text index per collection allowed, found existing text index \"%s\"", old.Name)
	}
	switch cmp {
	case ddl.IndexIdentical:
		return false, mongoerr.New(mongoerr.IndexOptionsConflict, "Index already exists with a different name: %s", old.Name)
	case ddl.IndexEquivalent:
		return false, mongoerr.New(mongoerr.IndexOptionsConflict,
			"An equivalent index already exists with a different name and options. Requested index: %s, existing index: %s",
			ddl.SpecString(req), ddl.SpecString(old))
	}
	return false, nil
}
