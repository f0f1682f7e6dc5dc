package crud

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Change streams. An aggregate whose first stage is $changeStream opens a tailable, awaitData
// cursor over the change logs of the shards (exec/changes): on a collection, a database
// ({aggregate: 1}) or, on admin with allChangesForCluster, every database. The stages
// MongoDB allows after $changeStream run over the events; every batch carries the
// postBatchResumeToken a client resumes from; a getMore that finds no event waits for one
// up to its maxTimeMS (the drivers' maxAwaitTimeMS, 1 s by default) on the node's hub, which
// every local commit with change records wakes.

// changeStreamStages are the stages MongoDB allows after $changeStream.
var changeStreamStages = map[string]bool{
	"$match": true, "$project": true, "$addFields": true, "$set": true, "$unset": true,
	"$replaceRoot": true, "$replaceWith": true, "$redact": true,
}

// isChangeStream reports whether pipeline starts with $changeStream.
func isChangeStream(pipeline bsoncore.Array) bool {
	vals, _ := pipeline.Values()
	if len(vals) == 0 {
		return false
	}
	doc, ok := vals[0].DocumentOK()
	if !ok {
		return false
	}
	el, ok := bsonx.FirstElement(doc)
	return ok && el.Key() == "$changeStream"
}

// watch answers an aggregate that opens a change stream.
func (h *Handlers) watch(ctx context.Context, r *command.Request, a *aggregateArgs) error {
	if r.Txn != nil {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Operation not permitted in transaction :: caused by :: $changeStream is not supported in a transaction")
	}
	if a.explain || explainOnly(r) {
		return mongoerr.New(mongoerr.NotImplemented, "explain of a $changeStream is not supported by cleave")
	}
	vals, _ := a.pipeline.Values()
	first, _ := bsonx.FirstElement(vals[0].Document())
	spec, err := changes.ParseSpec(first.Value())
	if err != nil {
		return err
	}
	scope, ns, err := watchScope(r.DB, a.coll, spec)
	if err != nil {
		return err
	}
	src, err := h.changeSources()
	if err != nil {
		return err
	}
	start, resumed := spec.Start(changes.Frontier(src))
	reader, err := changes.Open(h.Cat, src, changes.Options{Scope: scope, FullDocument: spec.FullDocument,
		BeforeChange: spec.BeforeChange, ShowExpandedEvents: spec.ShowExpandedEvents, Start: start, Resumed: resumed})
	if err != nil {
		return err
	}
	s, charge, err := h.watchPipeline(r, a, vals[1:], reader)
	if err != nil {
		return err
	}
	c := &cursor.Cursor{Ns: ns, Stream: s, Tailable: true, AwaitData: true, Waiter: h.Changes,
		Ended: reader.Ended, Trailer: func(dst []byte) []byte {
			dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, "postBatchResumeToken")
			return reader.ResumeToken().AppendDoc(dst)
		}}
	n := a.batchSize
	if n < 0 {
		n = defaultFirstBatch
	}
	ctx, cancel := query.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	err = h.FirstBatch(ctx, r, c, n, false)
	r.Charge += charge() + reader.Charge()
	return query.TimeLimitError(ctx, err)
}

// watchScope returns what a stream opened by an aggregate on db (coll "": {aggregate: 1})
// watches, and its cursor's namespace, with MongoDB's refusals.
func watchScope(db, coll string, spec *changes.Spec) (changes.Scope, string, error) {
	if spec.AllChangesForCluster {
		if db != "admin" || coll != "" {
			return changes.Scope{}, "", mongoerr.New(mongoerr.Location31123,
				"A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name")
		}
		return changes.Scope{}, "admin.$cmd.aggregate", nil
	}
	switch db {
	case "admin", "config", "local":
		return changes.Scope{}, "", mongoerr.New(mongoerr.Location40573,
			"$changeStream may not be opened on the internal %s database", db)
	}
	if coll == "" {
		return changes.Scope{DB: db}, db + ".$cmd.aggregate", nil
	}
	return changes.Scope{DB: db, Coll: coll}, db + "." + coll, nil
}

// changeSources returns the change logs a stream reads: every shard's. A shard on another
// node has its log there, which no stream reads yet.
func (h *Handlers) changeSources() ([]changes.Source, error) {
	src := make([]changes.Source, 0, len(h.Storage.Shards))
	for i, sh := range h.Storage.Shards {
		db, ok := catalog.LocalDB(sh)
		if !ok {
			return nil, mongoerr.New(mongoerr.NotImplemented,
				"change streams across the nodes of a cluster are not supported by cleave yet: shard %d is on another node", i)
		}
		src = append(src, changes.Source{Shard: uint32(i), DB: db})
	}
	return src, nil
}

// watchPipeline compiles the stages after $changeStream over reader's events, with the
// check that they keep each event's _id (the resume token), and returns the stream and
// what its stages charged.
func (h *Handlers) watchPipeline(r *command.Request, a *aggregateArgs, rest []bsoncore.Value, reader *changes.Reader) (stream.Stream, func() float64, error) {
	aidx, arr := bsoncore.AppendArrayStart(nil)
	for i, v := range rest {
		arr = bsoncore.AppendValueElement(arr, strconv.Itoa(i), v)
	}
	arr, _ = bsoncore.AppendArrayEnd(arr, aidx)
	sub := *a
	sub.pipeline = arr
	env, p, err := h.parsePipeline(r, &sub)
	if err != nil {
		return nil, nil, err
	}
	for _, raw := range p.Raw {
		el, _ := bsonx.FirstElement(raw)
		if !changeStreamStages[el.Key()] {
			return nil, nil, mongoerr.New(mongoerr.IllegalOperation, "%s is not permitted in a $changeStream pipeline", el.Key())
		}
	}
	s, err := p.OpenOver(reader, 0)
	if err != nil {
		return nil, nil, err
	}
	return &changes.KeepsID{In: s, R: reader}, func() float64 { return env.Charge }, nil
}
