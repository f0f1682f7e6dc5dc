package crud

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// insert runs the insert command.
func (h *Handlers) insert(ctx context.Context, r *command.Request) error {
	a, err := parseInsert(r)
	if err != nil {
		return err
	}
	vals := a.docs
	if !a.bypassTs {
		for i, v := range vals {
			vals[i].Data = h.Clock.FillEmptyTimestamps(v.Data)
		}
	}
	wc := write.ParseConcern(r.Body)
	rev := h.Storage.Catalog.Revision() // before the lookup: a newer catalog routes differently
	ci, err := h.Cat.ForWrite(r.DB, a.coll)
	if err != nil {
		return err
	}
	rt, release, err := h.CheckoutRetryable(r)
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := h.Deadline(ctx, a.maxTime)
	defer cancel()
	res := write.Results{}
	if err := h.insertRetryingStale(ctx, r, a.coll, ci, rev, vals, a.ordered, a.bypass, wc, rt, &res); err != nil {
		h.Counters.InsertedDocs.Add(res.N)
		return command.InterruptError(ctx, err)
	}
	h.Counters.InsertedDocs.Add(res.N)
	r.Charge += res.Charge
	r.Out = res.AppendReply(r.Out, false)
	return nil
}

// insertArgs are the parsed arguments of an insert command.
type insertArgs struct {
	coll                      string
	docs                      []bsoncore.Value // each a document
	ordered, bypass, bypassTs bool
	maxTime                   int64
}

// parseInsert parses an insert command: its collection, documents (1 to maxWriteBatchSize,
// each a document, or the command fails and nothing is written) and options.
func parseInsert(r *command.Request) (*insertArgs, error) {
	const cmd = "insert"
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.Collection(cmd, first.Value())
	if err != nil {
		return nil, err
	}
	a := &insertArgs{coll: name, ordered: true}
	var docs bsoncore.Array
	haveDocs := false
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "documents":
			haveDocs = true
			var ok bool
			if docs, ok = v.ArrayOK(); !ok {
				err = args.WrongType(cmd, key, v.Type, "array")
			}
		case "ordered":
			a.ordered, err = args.Bool(cmd, key, v)
		case "bypassDocumentValidation":
			a.bypass, err = args.Bool(cmd, key, v)
		case "bypassEmptyTsReplacement": // keeps Timestamp(0, 0) values as they are (clock.FillEmptyTimestamps)
			a.bypassTs, err = args.Bool(cmd, key, v)
		case "let":
			_, err = args.Doc(cmd, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if !haveDocs {
		return nil, args.Missing(cmd, "documents")
	}
	if v, err := r.Body.LookupErr("maxTimeMS"); err == nil {
		if a.maxTime, err = command.MaxTimeMS(cmd, v); err != nil {
			return nil, err
		}
	}
	if a.docs, err = docs.Values(); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid documents array")
	}
	if len(a.docs) == 0 || len(a.docs) > command.MaxWriteBatchSize {
		return nil, mongoerr.New(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got %d operations.",
			command.MaxWriteBatchSize, len(a.docs))
	}
	for i, v := range a.docs {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			// MongoDB's IDL parses documents as array<object>: the command fails, nothing is
			// written and the collection is not created.
			return nil, args.WrongType(cmd, "documents."+strconv.Itoa(i), v.Type, "object")
		}
	}
	return a, nil
}
