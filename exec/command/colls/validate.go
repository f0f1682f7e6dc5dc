package colls

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/validate"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// validateCmd runs validate: {validate: <coll>, full?, background?, repair?, metadata?,
// checkBSONConformance?, enforceFastCount?}. The checks are exec/validate's; the answer has
// MongoDB's shape: ns, nInvalidDocuments, nNonCompliantDocuments, nrecords, nIndexes,
// keysPerIndex, indexDetails, valid, repaired, warnings, errors, extraIndexEntries,
// missingIndexEntries, corruptRecords.
func (h *Handlers) validateCmd(ctx context.Context, r *command.Request) error {
	const cmd = "validate"
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.Collection(cmd, first.Value())
	if err != nil {
		return err
	}
	var opts validate.Options
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "full", "checkBSONConformance":
			var b bool
			b, err = args.Bool(cmd, key, v)
			opts.Full = opts.Full || b
		case "repair":
			var b bool
			if b, err = args.Bool(cmd, key, v); err == nil && b {
				err = mongoerr.New(mongoerr.NotImplemented, "validate with { repair: true } is not supported by cleave")
			}
		case "background", "metadata", "enforceFastCount", "fixMultikey":
			_, err = args.Bool(cmd, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	if h.Storage.Catalog.State().Collection(r.DB, name) == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Collection '%s.%s' does not exist to validate.", r.DB, name)
	}
	ci, err := h.Cat.Lookup(r.DB, name)
	if err != nil {
		return err
	}
	opts.InFlight = func() func(shard int, hash uint64) bool { return h.Shards.InFlightAt(ci.Meta.ID) }
	res, err := validate.Run(ctx, h.Cat, ci, opts)
	if err == nil && h.Remote != nil && h.Route.SpansRemote(ci) {
		err = h.Route.RemoteValidate(ctx, ci, opts.Full, res) // each node validates its own shards
	}
	if err == nil {
		var graphs []string
		graphs, err = h.Vectors.Validate(ci, h.Cat.Shards())
		res.Errors = append(res.Errors, graphs...)
	}
	if err != nil {
		return command.InterruptError(ctx, err)
	}
	r.Out = appendValidateReply(r.Out, res)
	return nil
}

// appendValidateReply appends the fields of validate's answer for res.
func appendValidateReply(out []byte, res *validate.Result) []byte {
	out = bsoncore.AppendStringElement(out, "ns", res.NS)
	// Counts are ints unless large, as mongod's appendNumber writes them.
	out = bsonx.AppendNumber(out, "nInvalidDocuments", res.InvalidDocuments)
	out = bsonx.AppendNumber(out, "nNonCompliantDocuments", 0)
	out = bsonx.AppendNumber(out, "nrecords", res.Records)
	out = bsoncore.AppendInt32Element(out, "nIndexes", int32(len(res.Indexes)))
	kidx, out := bsoncore.AppendDocumentElementStart(out, "keysPerIndex")
	for _, ir := range res.Indexes {
		out = bsonx.AppendNumber(out, ir.Name, ir.Keys)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, kidx)
	didx, out := bsoncore.AppendDocumentElementStart(out, "indexDetails")
	for _, ir := range res.Indexes {
		var iidx int32
		iidx, out = bsoncore.AppendDocumentElementStart(out, ir.Name)
		out = bsoncore.AppendBooleanElement(out, "valid", ir.Valid())
		out, _ = bsoncore.AppendDocumentEnd(out, iidx)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, didx)
	out = bsoncore.AppendBooleanElement(out, "valid", res.Valid())
	out = bsoncore.AppendBooleanElement(out, "repaired", false)
	out = route.AppendStrings(out, "warnings", res.Warnings)
	out = route.AppendStrings(out, "errors", res.Errors)
	out = route.AppendEntries(out, "extraIndexEntries", res.ExtraEntries)
	out = route.AppendEntries(out, "missingIndexEntries", res.MissingEntries)
	return route.AppendStrings(out, "corruptRecords", nil)
}
