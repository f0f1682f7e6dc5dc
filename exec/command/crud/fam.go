package crud

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/project"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/update"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// FAMArgs are the parsed arguments of a findAndModify command.
type FAMArgs struct {
	coll         string
	bypass       bool // bypassDocumentValidation
	bypassTs     bool // bypassEmptyTsReplacement (clock.FillEmptyTimestamps)
	query        bsoncore.Document
	sort         bsoncore.Document
	fields       bsoncore.Document
	collation    bsoncore.Document
	let          bsoncore.Document
	update       bsoncore.Value // Type 0: absent
	remove       bool
	returnNew    bool
	upsert       bool
	arrayFilters []bsoncore.Document
	hint         bsoncore.Value
	maxTimeMS    int64
	wc           write.Concern
	stmtID       int32 // the statement id of a retryable write (0 unless given)
}

// ParseFAM parses a findAndModify command body.
func ParseFAM(body bsoncore.Document) (*FAMArgs, error) {
	const cmd = "findAndModify"
	a := &FAMArgs{}
	first, _ := bsonx.FirstElement(body)
	coll, err := args.Collection(cmd, first.Value())
	if err != nil {
		return nil, err
	}
	a.coll = coll
	err = args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "query":
			a.query, err = args.OptionalDoc(cmd, key, v)
		case "sort":
			a.sort, err = args.OptionalDoc(cmd, key, v)
		case "fields":
			a.fields, err = args.OptionalDoc(cmd, key, v)
		case "collation":
			a.collation, err = args.Doc(cmd, key, v)
		case "let":
			a.let, err = args.Doc(cmd, key, v)
		case "update":
			a.update, err = updateArg(v)
		case "remove":
			a.remove, err = args.Bool(cmd, key, v)
		case "new":
			a.returnNew, err = args.Bool(cmd, key, v)
		case "upsert":
			a.upsert, err = args.Bool(cmd, key, v)
		case "arrayFilters":
			a.arrayFilters, err = arrayFiltersArg(cmd, key, v)
		case "hint":
			a.hint, err = hintArg(cmd, key, v)
		case "bypassDocumentValidation":
			a.bypass, err = args.Bool(cmd, key, v)
		case "bypassEmptyTsReplacement":
			a.bypassTs, err = args.Bool(cmd, key, v)
		case "stmtId":
			var n int64
			if n, err = args.Int64(cmd, key, v); err == nil {
				a.stmtID = int32(n)
			}
		case "encryptionInformation", "isTimeseriesNamespace", "sampleId":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if err := a.validate(); err != nil {
		return nil, err
	}
	if v, err := body.LookupErr("maxTimeMS"); err == nil {
		if a.maxTimeMS, err = command.MaxTimeMS(cmd, v); err != nil {
			return nil, err
		}
	}
	a.wc = write.ParseConcern(body)
	return a, nil
}

// validate refuses the combinations of options MongoDB refuses.
func (a *FAMArgs) validate() error {
	hasUpdate := a.update.Type != 0
	switch {
	case a.remove && hasUpdate:
		return mongoerr.New(mongoerr.FailedToParse, "Cannot specify both an update and remove=true")
	case !a.remove && !hasUpdate:
		return mongoerr.New(mongoerr.FailedToParse, "Either an update or remove=true must be specified")
	case a.remove && a.upsert:
		return mongoerr.New(mongoerr.FailedToParse, "Cannot specify both upsert=true and remove=true")
	case a.remove && a.returnNew:
		return mongoerr.New(mongoerr.FailedToParse, "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document")
	case a.remove && len(a.arrayFilters) > 0:
		return mongoerr.New(mongoerr.FailedToParse, "Cannot specify arrayFilters and remove=true")
	}
	return nil
}

// findAndModify runs the findAndModify command: it updates or removes the first document
// the query matches in sort order, and returns it (before or after the update).
func (h *Handlers) findAndModify(ctx context.Context, r *command.Request) error {
	a, err := ParseFAM(r.Body)
	if err != nil {
		return err
	}
	if err := catalog.CheckCollation(a.collation); err != nil {
		return err
	}
	ci, err := h.Cat.Lookup(r.DB, a.coll)
	if err != nil {
		return err
	}
	op, proj, err := h.CompileFAM(r.DB, a, ci, !explainOnly(r))
	if err != nil {
		return err
	}
	if explainOnly(r) {
		return h.explainWrite(ctx, r, op)
	}
	ctx, cancel := h.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	rt, release, err := h.CheckoutRetryable(r)
	if err != nil {
		return err
	}
	defer release()
	if rec, ok := command.Retried(rt, int(a.stmtID), false); ok {
		return appendFAMReply(r, a, op, proj, &rec)
	}
	op.Retry, op.Stmt = rt, a.stmtID
	var res write.Result
	err = h.runWriteReplanning(ctx, r, op, &ModifyStmt{Kind: "findAndModify", Index: a.stmtID}, &res, true)
	r.Charge += res.Charge
	r.Plan = res.Plan
	if err != nil {
		return famExecError(query.TimeLimitError(ctx, err))
	}
	if a.remove {
		h.Counters.DeletedDocs.Add(res.Matched)
	} else {
		h.Counters.UpdatedDocs.Add(res.Modified)
	}
	if res.Upserted.Type != 0 {
		h.Counters.InsertedDocs.Add(1)
	}
	return appendFAMReply(r, a, op, proj, &res)
}

// famExecError adds, to an error of running the write on the document (the update or the
// upsert refused, a duplicate key, a failed validation, an expression that fails on the
// document), the context MongoDB's findAndModify adds to whatever its plan executor throws;
// errors about the operation rather than the document (its time limit, the client gone,
// routing, transactions, throttling) keep their message, as do errors raised while parsing,
// which come before the executor:
//
//	Performing an update on the path '_id' would modify the immutable field '_id'
//	→ Plan executor error during findAndModify :: caused by :: Performing an update on the path '_id' …
func famExecError(err error) error {
	e := mongoerr.As(err)
	if e == nil || len(e.Labels) > 0 || !executorCode(e.Code) {
		return err
	}
	return e.WithContext("Plan executor error during findAndModify")
}

// executorCode reports whether code is one a document's own write fails with, rather than
// the operation's circumstances.
func executorCode(code mongoerr.Code) bool {
	switch code {
	case mongoerr.MaxTimeMSExpired, mongoerr.Interrupted, mongoerr.InterruptedAtShutdown, mongoerr.ClientDisconnect,
		mongoerr.ExceededTimeLimit, mongoerr.InterruptedDueToReplStateChange, mongoerr.ShutdownInProgress,
		mongoerr.StaleConfig, mongoerr.StaleDbVersion, mongoerr.HostUnreachable, mongoerr.NetworkTimeout,
		mongoerr.NotWritablePrimary, mongoerr.WriteConflict, mongoerr.LockTimeout, mongoerr.NoSuchTransaction,
		mongoerr.OperationNotSupportedInTransaction, mongoerr.NamespaceNotFound, mongoerr.CommandNotSupportedOnView,
		mongoerr.TooManyRequests, mongoerr.OutOfDiskSpace, mongoerr.InternalError:
		return false
	}
	return true
}

// CompileFAM compiles a findAndModify into a single-document writeOp and its projection
// (nil when fields is absent). An upsert creates the collection when create is set.
func (h *Handlers) CompileFAM(db string, a *FAMArgs, ci *catalog.Coll, create bool) (*write.Op, *project.Projection, error) {
	coll, err := CollationFor(a.collation, ci)
	if err != nil {
		return nil, nil, err
	}
	f, err := compileWriteFilter(a.query, a.let, coll)
	if err != nil {
		return nil, nil, err
	}
	sortSpec, err := query.ParseSort(a.sort)
	if err != nil {
		return nil, nil, err
	}
	var proj *project.Projection
	if len(a.fields) > 5 {
		if proj, err = project.Compile(a.fields, &project.Options{Filter: f, Expr: expr.CompileValue}); err != nil {
			return nil, nil, err
		}
	}
	q := a.query
	if q == nil {
		q = query.EmptyDoc
	}
	op := &write.Op{CI: ci, Query: q, Filter: f, Sort: sortSpec, Hint: a.hint, Upsert: a.upsert,
		Sync: a.wc.Sync(), KeepImages: true, Bypass: a.bypass}
	if !a.remove {
		opts := write.UpdateOptions(a.update, a.arrayFilters, a.let, nil, updateFunctionHook(a.update, a.maxTimeMS))
		opts.Timestamp, opts.KeepEmptyTimestamps, opts.Collator = h.Clock.Timestamp, a.bypassTs, coll
		if op.Upd, err = update.CompileValue(a.update, opts); err != nil {
			return nil, nil, err
		}
	}
	if ci == nil && a.upsert && create {
		if op.CI, err = h.Cat.ForWrite(db, a.coll); err != nil {
			return nil, nil, err
		}
	}
	if err := op.CheckFAMTarget(); err != nil {
		return nil, nil, err
	}
	return op, proj, nil
}

// appendFAMReply appends lastErrorObject and value: the removed document, or the updated
// one before or after the update (new), projected by fields.
func appendFAMReply(r *command.Request, a *FAMArgs, op *write.Op, proj *project.Projection, res *write.Result) error {
	n := res.Matched
	if res.Upserted.Type != 0 {
		n = 1
	}
	lidx, out := bsoncore.AppendDocumentElementStart(r.Out, "lastErrorObject")
	out = bsoncore.AppendInt32Element(out, "n", int32(n))
	if !a.remove {
		out = bsoncore.AppendBooleanElement(out, "updatedExisting", res.Matched > 0)
		if res.Upserted.Type != 0 {
			out = bsoncore.AppendValueElement(out, "upserted", res.Upserted)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, lidx)
	value := res.Before
	if a.returnNew {
		value = res.After
	} else if res.Upserted.Type != 0 {
		value = nil // there was no document before the upsert
	}
	if value == nil {
		r.Out = bsoncore.AppendNullElement(out, "value")
		return nil
	}
	if proj != nil {
		_, pos := op.Filter.MatchPos(value)
		projected, err := proj.Apply(nil, value, pos)
		if err != nil {
			return err
		}
		value = projected
	}
	r.Out = bsoncore.AppendDocumentElement(out, "value", value)
	return nil
}
