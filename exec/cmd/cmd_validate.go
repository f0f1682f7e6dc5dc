package cmd

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/validate"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// validateCmd runs validate: {validate: <coll>, full?, background?, repair?, metadata?,
// checkBSONConformance?, enforceFastCount?}. The checks are exec/validate's; the answer has
// MongoDB's shape: ns, nInvalidDocuments, nNonCompliantDocuments, nrecords, nIndexes,
// keysPerIndex, indexDetails, valid, repaired, warnings, errors, extraIndexEntries,
// missingIndexEntries, corruptRecords.
func (e *Server) validateCmd(ctx context.Context, r *Request) error {
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
	if e.Storage.Catalog.State().Collection(r.DB, name) == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Collection '%s.%s' does not exist to validate.", r.DB, name)
	}
	ci, err := e.Cat.Lookup(r.DB, name)
	if err != nil {
		return err
	}
	opts.InFlight = func() func(shard int, hash uint64) bool { return e.Shards.InFlightAt(ci.Meta.ID) }
	res, err := validate.Run(ctx, e.Cat, ci, opts)
	if err == nil && e.Remote != nil && e.spansRemote(ci) {
		err = e.remoteValidate(ctx, ci, opts.Full, res) // each node validates its own shards
	}
	if err != nil {
		return InterruptError(ctx, err)
	}
	r.Out = appendValidateReply(r.Out, res)
	return nil
}

// appendValidateReply appends the fields of validate's answer for res.
func appendValidateReply(out []byte, res *validate.Result) []byte {
	out = bsoncore.AppendStringElement(out, "ns", res.NS)
	out = bsoncore.AppendInt64Element(out, "nInvalidDocuments", res.InvalidDocuments)
	out = bsoncore.AppendInt64Element(out, "nNonCompliantDocuments", 0)
	out = bsoncore.AppendInt64Element(out, "nrecords", res.Records)
	out = bsoncore.AppendInt32Element(out, "nIndexes", int32(len(res.Indexes)))
	kidx, out := bsoncore.AppendDocumentElementStart(out, "keysPerIndex")
	for _, ir := range res.Indexes {
		out = bsoncore.AppendInt64Element(out, ir.Name, ir.Keys)
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
	out = appendStrings(out, "warnings", res.Warnings)
	out = appendStrings(out, "errors", res.Errors)
	out = appendEntries(out, "extraIndexEntries", res.ExtraEntries)
	out = appendEntries(out, "missingIndexEntries", res.MissingEntries)
	return appendStrings(out, "corruptRecords", nil)
}

// appendEntries appends an array field of index entries as MongoDB describes them
// ({indexName, recordId, indexKey}), with cleave's place of the entry: the shard, the
// partitioning hash and the _id (cleave's record id).
func appendEntries(out []byte, key string, es []validate.Entry) []byte {
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

// appendStrings appends an array field of strings.
func appendStrings(out []byte, key string, ss []string) []byte {
	aidx, out := bsoncore.AppendArrayElementStart(out, key)
	for i, s := range ss {
		out = bsoncore.AppendStringElement(out, strconv.Itoa(i), s)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return out
}
