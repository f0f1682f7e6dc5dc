package colls

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Atlas Search index management (createSearchIndexes, updateSearchIndex, dropSearchIndex and
// the $listSearchIndexes stage) needs Atlas' search service; a MongoDB 7.0 server without one
// refuses them after parsing their arguments, before looking at the collection. cleave gives
// the refusals of 7.0: the commands answer as 7.0 Enterprise does (a 7.0 Community server
// does not know them at all, which the drivers' specification tests do not accept), the
// stage as 7.0 Community does.

// errSearchIndexCommands returns 7.0's refusal of the search index commands.
func errSearchIndexCommands() error {
	return mongoerr.New(mongoerr.CommandNotSupported, "Search index commands are only supported with Atlas.")
}

// addSearchIndexCommands registers the Atlas Search index commands.
func (h *Handlers) addSearchIndexCommands(add func(*command.Command)) {
	add(&command.Command{Name: "createSearchIndexes", Run: h.createSearchIndexes, Action: auth.ActionDDL, Help: "Command to create a search index. Only supported with Atlas.", Props: command.APIV1})
	add(&command.Command{Name: "updateSearchIndex", Run: h.updateSearchIndex, Action: auth.ActionDDL, Help: "Command to update a search index. Only supported with Atlas.", Props: command.APIV1})
	add(&command.Command{Name: "dropSearchIndex", Run: h.dropSearchIndex, Action: auth.ActionDDL, Help: "Command to drop a search index. Only supported with Atlas.", Props: command.APIV1})
}

// createSearchIndexes parses {createSearchIndexes: <coll>, indexes: [{name?, type?,
// definition}]} and refuses it.
func (h *Handlers) createSearchIndexes(_ context.Context, r *command.Request) error {
	const cmd = "createSearchIndexes"
	if err := searchIndexCollection(cmd, r.Body); err != nil {
		return err
	}
	var indexes bsoncore.Array
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
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
	vals, _ := indexes.Values()
	for _, v := range vals {
		spec, ok := v.DocumentOK()
		if !ok {
			return args.WrongType(cmd, "indexes", v.Type, "object")
		}
		if err := checkSearchIndexSpec(cmd+".indexes", spec); err != nil {
			return err
		}
	}
	return errSearchIndexCommands()
}

// checkSearchIndexSpec checks one SearchIndexSpec: name and type strings, a definition object.
func checkSearchIndexSpec(ctx string, spec bsoncore.Document) error {
	hasDefinition := false
	elems, _ := spec.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "name", "type":
			if _, err := args.String(ctx, el.Key(), v); err != nil {
				return err
			}
		case "definition":
			if _, err := args.Doc(ctx, el.Key(), v); err != nil {
				return err
			}
			hasDefinition = true
		default:
			return mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", ctx, el.Key())
		}
	}
	if !hasDefinition {
		return args.Missing(ctx, "definition")
	}
	return nil
}

// updateSearchIndex parses {updateSearchIndex: <coll>, id?, name?, definition} and refuses it.
func (h *Handlers) updateSearchIndex(_ context.Context, r *command.Request) error {
	const cmd = "updateSearchIndex"
	if err := searchIndexCollection(cmd, r.Body); err != nil {
		return err
	}
	hasDefinition := false
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "id", "name":
			_, err = args.String(cmd, key, v)
		case "definition":
			hasDefinition = true
			_, err = args.Doc(cmd, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	if !hasDefinition {
		return args.Missing(cmd, "definition")
	}
	return errSearchIndexCommands()
}

// dropSearchIndex parses {dropSearchIndex: <coll>, id?, name?} and refuses it.
func (h *Handlers) dropSearchIndex(_ context.Context, r *command.Request) error {
	const cmd = "dropSearchIndex"
	if err := searchIndexCollection(cmd, r.Body); err != nil {
		return err
	}
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "id" && key != "name" {
			return false, nil
		}
		_, err := args.String(cmd, key, v)
		return true, err
	})
	if err != nil {
		return err
	}
	return errSearchIndexCommands()
}

// searchIndexCollection validates the collection name a search index command starts with.
func searchIndexCollection(cmd string, body bsoncore.Document) error {
	first, _ := bsonx.FirstElement(body)
	_, err := args.Collection(cmd, first.Value())
	return err
}
