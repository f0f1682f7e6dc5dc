package server

import (
	"context"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Cluster parameters (getClusterParameter, setClusterParameter). Of MongoDB 7.0's, a
// replica set or sharded cluster outside Atlas has changeStreamOptions: how long the
// pre- and post-images of change events are kept, {preAndPostImages: {expireAfterSeconds:
// "off" | n}}. cleave keeps a collection's images in its shards' change logs, with the
// events, for as long as the logs keep them (--change-retention, --change-retention-bytes):
// what "off" means on MongoDB (images as long as the oplog). So getClusterParameter reports
// "off", setClusterParameter accepts it, and a number of seconds is refused (238) until
// images expire apart from their events. Every other name is unknown, as on a mongos
// without test commands (NoSuchKey).

// changeStreamOptionsName is the one cluster parameter cleave has.
const changeStreamOptionsName = "changeStreamOptions"

// addClusterParameterCommands registers getClusterParameter and setClusterParameter.
func (h *Handlers) addClusterParameterCommands(add func(*command.Command)) {
	add(&command.Command{Name: "getClusterParameter", Run: h.getClusterParameter, Action: auth.ActionClusterAdmin, AdminOnly: true,
		Help: "get the cluster parameters: a name, a list of names or \"*\""})
	add(&command.Command{Name: "setClusterParameter", Run: h.setClusterParameter, Action: auth.ActionClusterAdmin, AdminOnly: true,
		Help: "set a cluster parameter: {setClusterParameter: {name: value}}", Props: command.WriteConcern})
}

// changeStreamOptions is the changeStreamOptions parameter as cleave honours it.
func changeStreamOptions() bsoncore.Document {
	images := bsoncore.NewDocumentBuilder().AppendString("expireAfterSeconds", "off").Build()
	return bsoncore.NewDocumentBuilder().AppendString("_id", changeStreamOptionsName).
		AppendDocument("preAndPostImages", images).Build()
}

// getClusterParameter answers {getClusterParameter: name | [names] | "*"} with
// {clusterParameters: [documents]}.
func (h *Handlers) getClusterParameter(_ context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	var names []string
	v := first.Value()
	switch v.Type {
	case bsoncore.TypeString:
		if s := v.StringValue(); s != "*" {
			names = []string{s}
		}
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		for i, nv := range vals {
			s, ok := nv.StringValueOK()
			if !ok {
				return args.WrongType(r.Name, r.Name+"."+strconv.Itoa(i), nv.Type, "string")
			}
			names = append(names, s)
		}
	default:
		return args.WrongType(r.Name, r.Name, v.Type, "string", "array")
	}
	var unknown []string
	for _, n := range names {
		if n != changeStreamOptionsName && !slices.Contains(unknown, n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return mongoerr.New(mongoerr.NoSuchKey, "Unknown Cluster Parameter(s): [ %s ]", quoted(unknown))
	}
	idx, out := bsoncore.AppendArrayElementStart(r.Out, "clusterParameters")
	out = bsoncore.AppendDocumentElement(out, "0", changeStreamOptions())
	r.Out, _ = bsoncore.AppendArrayEnd(out, idx)
	return nil
}

// quoted returns names quoted and separated by commas.
func quoted(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += strconv.Quote(n)
	}
	return out
}

// setClusterParameter answers {setClusterParameter: {changeStreamOptions: {preAndPostImages:
// {expireAfterSeconds: "off"}}}}.
func (h *Handlers) setClusterParameter(_ context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	param, err := args.Doc(r.Name, r.Name, first.Value())
	if err != nil {
		return err
	}
	elems, _ := param.Elements()
	if len(elems) != 1 {
		return mongoerr.New(mongoerr.IllegalOperation, "Exactly one cluster parameter can be set at a time")
	}
	name := elems[0].Key()
	if name != changeStreamOptionsName {
		return mongoerr.New(mongoerr.NoSuchKey, "Unknown Cluster Parameter %s", name)
	}
	val, err := args.Doc(r.Name, name, elems[0].Value())
	if err != nil {
		return err
	}
	exp := val.Lookup("preAndPostImages", "expireAfterSeconds")
	switch s, isString := exp.StringValueOK(); {
	case exp.Type == 0 || (isString && s == "off"):
		return nil
	case isString:
		return mongoerr.New(mongoerr.BadValue, "Invalid value for expireAfterSeconds: %s: expected \"off\" or a positive number", s)
	}
	if n, ok := exp.AsInt64OK(); !ok || n <= 0 {
		return mongoerr.New(mongoerr.BadValue, "Invalid value for expireAfterSeconds: expected \"off\" or a positive number")
	}
	return mongoerr.New(mongoerr.NotImplemented, "changeStreamOptions.preAndPostImages.expireAfterSeconds is not supported by cleave: "+
		"pre- and post-images are kept with their change events, as long as each shard's change log (--change-retention, --change-retention-bytes)")
}
