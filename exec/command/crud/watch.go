package crud

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/query"
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
	src, remote := h.changeSources()
	start, resumed := spec.Start()
	lookupRU := 0.0 // what updateLookup's reads cost: the cursor is used by one getMore at a time
	lookup := func(ctx context.Context, db, coll string, uuid []byte, key bsoncore.Document) (bsoncore.Document, error) {
		doc, ru, err := h.lookupChanged(ctx, db, coll, uuid, key)
		lookupRU += ru
		return doc, err
	}
	reader, err := changes.Open(ctx, src, changes.Options{Scope: scope, FullDocument: spec.FullDocument,
		BeforeChange: spec.BeforeChange, ShowExpandedEvents: spec.ShowExpandedEvents, Start: start, Resumed: resumed,
		Lookup: lookup})
	if err != nil {
		return err
	}
	s, charge, err := h.watchPipeline(ctx, r, a, vals[1:], reader)
	if err != nil {
		return err
	}
	s.OnClose = h.Changes.Opened(ns)
	var waiter interface{ Wait() <-chan struct{} } = h.Changes
	if remote {
		waiter = polling{h.Changes}
	}
	c := &cursor.Cursor{Ns: ns, Stream: s, Tailable: true, AwaitData: true, Waiter: waiter,
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
	spent := 0.0
	c.Charged = func() float64 { // what the reads and the stages cost since the last batch
		total := charge() + reader.Charge() + lookupRU
		d := total - spent
		spent = total
		return d
	}
	err = h.FirstBatch(ctx, r, c, n, false)
	if t := reader.StartTime(); t != 0 && t != ^uint64(0) {
		r.OperationTime = t
	}
	r.Charge += c.Charged()
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

// changeSources returns the change logs a stream reads, every shard's, and whether some are
// (or may come to be: a replicated shard's leader moves) on other nodes. Each log follows its
// shard to whichever node serves it at each read (changes.FollowLog).
func (h *Handlers) changeSources() (src []changes.Source, remote bool) {
	var r catalog.Peers
	if h.Remote != nil { // NB: a nil *route.Nodes would make a non-nil interface
		r = h.Remote
	}
	shards := h.Cat.Shards() // in cluster mode, every shard of the cluster (others' as stand-ins)
	src = make([]changes.Source, 0, len(shards))
	for i := range shards {
		src = append(src, changes.Source{Shard: uint32(i), Log: changes.FollowLog(h.Cat, r, i)})
	}
	return src, r != nil
}

// remotePoll is how often a waiting getMore of a stream that reads other nodes' logs looks
// at them: their commits do not wake this node's hub.
const remotePoll = 100 * time.Millisecond

// polling is the waiter of a stream that also reads other nodes' logs: woken by this node's
// commits, and every remotePoll.
type polling struct{ hub *changes.Hub }

// Wait implements the cursor's waiter.
func (p polling) Wait() <-chan struct{} {
	local := p.hub.Wait()
	ch := make(chan struct{})
	go func() {
		t := time.NewTimer(remotePoll)
		defer t.Stop()
		select {
		case <-local:
		case <-t.C:
		}
		close(ch)
	}()
	return ch
}

// lookupChanged finds the current version of an update event's document (updateLookup): the
// document of db.coll matching its documentKey, read as a find would (on any node), nil when
// it is gone or the collection is not the event's (another UUID), with the request units of
// the read (a point read when documentKey holds the shard key and _id).
func (h *Handlers) lookupChanged(ctx context.Context, db, coll string, uuid []byte, key bsoncore.Document) (bsoncore.Document, float64, error) {
	ci, err := h.Cat.Lookup(db, coll)
	if err != nil || ci == nil || ci.View != nil || uuid != nil && !bytes.Equal(uuid, ci.Meta.UUID[:]) {
		return nil, 0, nil //nolint:nilerr // a collection gone since: its document is gone
	}
	f, err := compileWriteFilter(key, nil, nil)
	if err != nil {
		return nil, 0, err
	}
	s, _, shards, err := h.Query.Open(&query.Query{CI: ci, Filter: f, Limit: 1})
	if err != nil {
		return nil, 0, err
	}
	doc, err := s.Next(ctx)
	if doc != nil {
		doc = slices.Clone(doc)
	}
	s.Close()
	ru := 0.0
	for _, sh := range shards {
		ru += sh.Stats.Charge()
	}
	return doc, ru, err
}

// watchPipeline compiles the stages after $changeStream over reader's events, with the
// check that they keep each event's _id (the resume token), and returns the stream and
// what its stages charged.
func (h *Handlers) watchPipeline(ctx context.Context, r *command.Request, a *aggregateArgs, rest []bsoncore.Value, reader *changes.Reader) (*changes.KeepsID, func() float64, error) {
	aidx, arr := bsoncore.AppendArrayStart(nil)
	for i, v := range rest {
		arr = bsoncore.AppendValueElement(arr, strconv.Itoa(i), v)
	}
	arr, _ = bsoncore.AppendArrayEnd(arr, aidx)
	sub := *a
	sub.pipeline = arr
	env, p, err := h.parsePipeline(ctx, r, &sub)
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
