package node

import (
	"context"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/command/crud"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/validate"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The owner's side of remote execution (exec/route is the router's): internal commands
// that run the per-shard part of an operation on this node's shards. They are not for
// clients (mongos' _shardsvr commands play this role), need the internal action under --auth
// (only the cluster's own __system user has it: access.InternalHello), and answer StaleConfig
// 13388 when the request was planned on a map of the shard that differs from this node's.

// Batches of a remote read: the first is at most the router's limit (when small), each
// next one up to remoteBatchDocs documents or remoteBatchBytes.
const (
	remoteFirstBatch = 256
	remoteBatchDocs  = 2048
	remoteBatchBytes = 4 << 20
)

// addInternalCommands registers the internal shard commands.
func (h *Handlers) addInternalCommands(add func(*command.Command)) {
	add(&command.Command{Name: "_cleaveShardFind", Run: h.shardFind, Action: auth.ActionInternal, Help: "internal: a shard's part of a read", Props: command.OpensCursor})
	add(&command.Command{Name: query.PointGetCommand, Run: h.shardGet, Action: auth.ActionInternal, Help: "internal: a point read on this node's shard (compact)", Props: command.Direct, Brief: h.caughtUp})
	add(&command.Command{Name: "_cleaveShardGetMore", Run: h.shardGetMore, Action: auth.ActionInternal, Help: "internal: the next batch of a shard's read"})
	add(&command.Command{Name: "_cleaveShardKill", Run: h.shardKill, Action: auth.ActionInternal, Help: "internal: ends a shard's read"})
	add(&command.Command{Name: "_cleaveShardWrite", Run: h.shardWrite, Action: auth.ActionInternal, Help: "internal: the documents of an insert on this node's shards"})
	add(&command.Command{Name: "_cleaveShardIndexes", Run: h.shardIndexes, Action: auth.ActionInternal, Help: "internal: an index build's or drop's part on this node's shards"})
	add(&command.Command{Name: "_cleaveShardStats", Run: h.shardStats, Action: auth.ActionInternal, Help: "internal: a collection's sizes or validation on this node's shards"})
	add(&command.Command{Name: "_cleaveShardChanges", Run: h.shardChanges, Action: auth.ActionInternal, Help: "internal: records of a shard's change log, for a change stream on another node"})
	add(&command.Command{Name: access.PipelineCommand, Run: pipeline, Action: auth.ActionInternal, Help: "internal: this connection's requests run at once, each answered as it finishes"})
	add(&command.Command{Name: "_cleaveShardVectorSearch", Run: h.shardVectorSearch, Action: auth.ActionInternal, Help: "internal: a $vectorSearch over this node's shards"})
	add(&command.Command{Name: route.UpdateCommand, Run: h.shardUpdate, Action: auth.ActionInternal, Help: "internal: a single-document update on this node's shard (compact)", Props: command.Direct})
	add(&command.Command{Name: "_cleaveShardModify", Run: h.shardModify, Action: auth.ActionInternal, Help: "internal: a statement of an update, delete or findAndModify on this node's shards"})
}

// pipeline makes the connection pipelined once its reply is written: its requests run at once
// and are answered as they finish (wire.Request.Concurrent), which the internal client
// (wire.Client) matches to them by responseTo.
func pipeline(_ context.Context, r *command.Request) error {
	if r.Wire == nil {
		return mongoerr.New(mongoerr.IllegalOperation, "%s needs a connection", access.PipelineCommand)
	}
	r.Wire.Concurrent = true
	return nil
}

// catchUp waits until this node's catalog reflects the router's revision rev.
func (h *Handlers) catchUp(ctx context.Context, rev int64) error {
	if rev <= h.Storage.Catalog.Revision() {
		return nil
	}
	if err := h.Storage.Catalog.WaitRevision(ctx, rev); err != nil {
		return mongoerr.Wrap(err, mongoerr.StaleConfig, "this node's catalog is behind revision %d", rev)
	}
	return nil
}

// caughtUp is the compact point read's Brief: it runs on the connection's reader when this
// node's catalog is at the router's revision already (catchUp has nothing to wait for).
func (h *Handlers) caughtUp(body bsoncore.Document) bool {
	rev, ok := body.Lookup("rev").Int64OK()
	return ok && rev <= h.Storage.Catalog.Revision()
}

// ownedColl returns the collection an internal command names, checking that it is the one
// the router planned on (same id) and that shard s is this node's.
func (h *Handlers) ownedColl(ctx context.Context, r *command.Request, s int) (*catalog.Coll, error) {
	first, _ := bsonx.FirstElement(r.Body)
	name, _ := first.Value().StringValueOK()
	rev, _ := r.Body.Lookup("rev").Int64OK()
	id, _ := r.Body.Lookup("collId").Int64OK()
	return h.ownedCollAt(ctx, r.DB, name, id, rev, s)
}

// ownedCollAt is ownedColl for collection db.name, of id id in the router's catalog at
// revision rev; s < 0 checks no shard.
func (h *Handlers) ownedCollAt(ctx context.Context, db, name string, id, rev int64, s int) (*catalog.Coll, error) {
	if err := h.catchUp(ctx, rev); err != nil {
		return nil, err
	}
	if s >= 0 { // a write checks each document's shard (shardWrite)
		shards := h.Cat.Shards()
		if s >= len(shards) {
			return nil, mongoerr.New(mongoerr.StaleConfig, "shard %d is unknown to this node", s)
		}
		if node, remote := shards[s].Node(); remote {
			return nil, mongoerr.New(mongoerr.StaleConfig, "shard %d is on node %s, not this one", s, route.NodeName(node))
		}
	}
	ci, err := h.Cat.Lookup(db, name)
	if err != nil {
		return nil, err
	}
	if ci == nil || int64(ci.Meta.ID) != id {
		return nil, mongoerr.New(mongoerr.StaleConfig, "collection %s.%s is not the one the request was planned on", db, name)
	}
	return ci, nil
}

// shardFind opens a shard's part of a read planned on another node (query.RemoteScanSpec)
// and answers its first batch: {cursor: id (0: done), docs: binary (concatenated
// documents), stats}.
func (h *Handlers) shardFind(ctx context.Context, r *command.Request) error {
	b := r.Body
	s, _ := b.Lookup("shard").Int32OK()
	ci, err := h.ownedColl(ctx, r, int(s))
	if err != nil {
		return err
	}
	filter, _ := b.Lookup("filter").DocumentOK()
	vars, _ := b.Lookup("let").DocumentOK()
	// The router resolved the collation (explicit, the collection's default, or simple):
	// none sent is the simple one, whatever the collection's default.
	var coll bsonx.Collator
	if d, ok := b.Lookup("collation").DocumentOK(); ok {
		if coll, err = crud.CollationFor(d, nil); err != nil {
			return err
		}
	}
	f, err := query.CompileFilterWith(filter, vars, coll)
	if err != nil {
		return err
	}
	sortDoc, _ := b.Lookup("sort").DocumentOK()
	sortSpec, err := query.ParseSort(sortDoc)
	if err != nil {
		return err
	}
	hint, _ := b.LookupErr("hint")
	ranges, ok := query.DecodeRanges(b.Lookup("ranges").Array())
	if !ok {
		return mongoerr.New(mongoerr.BadValue, "_cleaveShardFind: malformed ranges")
	}
	pd, _ := b.Lookup("plan").DocumentOK()
	kind, _ := pd.Lookup("kind").Int32OK()
	index, _ := pd.Lookup("index").StringValueOK()
	keysOnly, _ := pd.Lookup("keysOnly").BooleanOK() // absent from an older router: none of the three
	distinct, _ := pd.Lookup("distinct").StringValueOK()
	distinctField, _ := pd.Lookup("distinctField").Int32OK()
	sig := query.PlanSig{Kind: query.Kind(kind), Index: index,
		Sorted: pd.Lookup("sorted").Boolean(), Reverse: pd.Lookup("reverse").Boolean(),
		KeysOnly: keysOnly, Distinct: distinct, DistinctField: int(distinctField)}
	if level, _ := b.Lookup("readConcern", "level").StringValueOK(); level == "linearizable" {
		// The router's read is linearizable: this node's replica must still lead the shard
		// and have applied what was committed before it reads.
		if db, ok := catalog.LocalDB(h.Cat.Shards()[s]); ok {
			if err := command.ReadBarrier(ctx, db); err != nil {
				return err
			}
		}
	}
	ss, err := h.Query.OpenOwned(ci, f, sortSpec, hint, int(s), ranges, sig)
	if err != nil {
		return err
	}
	if _, pos, ok := b.Lookup("resume").BinaryOK(); ok { // a yielded read of the router's
		if err := ss.ResumeFrom(pos, b.Lookup("resumeUnread").Boolean()); err != nil {
			ss.Close()
			return err
		}
	}
	limit, _ := b.Lookup("limit").Int64OK()
	n := remoteFirstBatch
	if limit > 0 && limit < int64(n) {
		n = int(limit)
	}
	c := &cursor.Cursor{Ns: ci.NS(), Stream: ss, Coll: ci.Meta}
	return h.shardBatch(ctx, r, c, ss, n, limit, true)
}

// shardBatch reads up to n documents of ss into r's reply and registers c (first) or
// keeps it while ss is not done. A first batch that holds the router's limit (0: none) ends
// the read: the router needs no more, and would otherwise kill the cursor with a round trip
// of its own (a findOne by _id on another node paid two).
func (h *Handlers) shardBatch(ctx context.Context, r *command.Request, c *cursor.Cursor, ss *query.ShardStream, n int, limit int64, first bool) error {
	// A point read's batch holds one document: no need for 16 KiB up front.
	buf := make([]byte, 0, min(16<<10, n*4<<10))
	var pos []byte // each document's position, while the stream tells them
	positioned := true
	done := false
	for i := 0; i < n && len(buf) < remoteBatchBytes; i++ {
		d, err := ss.Next(ctx)
		if err != nil {
			if first {
				ss.Close()
			} else {
				h.Cursors.Remove(c.ID)
			}
			return err
		}
		if d == nil {
			done = true
			break
		}
		buf = append(buf, d...)
		if positioned {
			pos, positioned = ss.AppendPos(pos)
		}
		if first && limit > 0 && int64(i+1) >= limit {
			done = true
			break
		}
	}
	stats := ss.Stats
	var id int64
	switch {
	case done && first:
		ss.Close()
	case done:
		h.Cursors.Remove(c.ID)
	case first:
		id = h.Cursors.Add(c)
	default:
		id = c.ID
	}
	out := bsoncore.AppendInt64Element(r.Out, "cursor", id)
	out = bsoncore.AppendBinaryElement(out, "docs", 0, buf)
	if positioned && len(buf) > 0 {
		out = bsoncore.AppendBinaryElement(out, "pos", 0, pos)
	}
	r.Out = query.AppendScanStats(out, &stats)
	return nil
}

// shardGetMore answers the next batch of a shard's read.
func (h *Handlers) shardGetMore(ctx context.Context, r *command.Request) error {
	id, _ := bsonx.FirstElement(r.Body)
	c, err := h.Cursors.Acquire(id.Value().Int64())
	if err != nil {
		return err
	}
	ss, ok := c.Stream.(*query.ShardStream)
	if !ok {
		h.Cursors.Done(c, false)
		return mongoerr.New(mongoerr.CursorNotFound, "cursor id %d is not a shard read", c.ID)
	}
	err = h.shardBatch(ctx, r, c, ss, remoteBatchDocs, 0, false)
	h.Cursors.Done(c, false) // closes it if shardBatch removed it (exhausted or failed)
	return err
}

// shardKill ends a shard's read.
func (h *Handlers) shardKill(_ context.Context, r *command.Request) error {
	id, _ := bsonx.FirstElement(r.Body)
	h.Cursors.Remove(id.Value().Int64())
	return nil
}

// shardIndexes runs, on this node's shards, the part of an index build or drop another node
// asked for (see above): {op: "build" | "delete", ids}.
func (h *Handlers) shardIndexes(ctx context.Context, r *command.Request) error {
	ci, err := h.ownedColl(ctx, r, -1)
	if err != nil {
		return err
	}
	arr, _ := r.Body.Lookup("ids").ArrayOK()
	vals, _ := arr.Values()
	ids := make([]store.IndexID, 0, len(vals))
	for _, v := range vals {
		ids = append(ids, store.IndexID(v.AsInt64()))
	}
	// No move between this node and another runs meanwhile (sharding's move fence): the
	// fill never meets a copy this node holds without owning it yet. Not the DDL lock, which
	// the node that runs the build holds, and another node's build may hold here.
	release, err := h.Shards.FenceMoves(ctx)
	if err != nil {
		return err
	}
	defer release()
	ci = h.Cat.Refresh(ci)
	switch op, _ := r.Body.Lookup("op").StringValueOK(); op {
	case "build":
		for _, id := range ids {
			if !slices.ContainsFunc(ci.Meta.Indexes, func(x store.Index) bool { return x.ID == id && !x.Ready }) {
				return mongoerr.New(mongoerr.StaleConfig, "index %d of %s is not being built", id, ci.NS())
			}
		}
		h.Cat.Barrier() // this node's writers that did not see the new indexes finish first
		return h.DDL.FillLocal(ctx, ci.Meta, ids)
	case "delete":
		h.DDL.DeleteLocalIndexData(ci.Meta, ids)
		return nil
	default:
		return mongoerr.New(mongoerr.BadValue, "_cleaveShardIndexes: unknown op %q", op)
	}
}

// shardStats answers, on this node, another node's _cleaveShardStats for its shards:
// {shards: [{shard, count, size, storage}]} (sizes), {n} (count: the
// fast path's) or this node's validation of the collection (validate), its shards' vector
// search graphs included.
func (h *Handlers) shardStats(ctx context.Context, r *command.Request) error {
	ci, err := h.ownedColl(ctx, r, -1)
	if err != nil {
		return err
	}
	switch what, _ := r.Body.Lookup("what").StringValueOK(); what {
	case "sizes":
		aidx, out := bsoncore.AppendArrayElementStart(r.Out, "shards")
		n := 0
		for s, sz := range h.Route.LocalOwnedSizes(ci) {
			if sz == nil {
				continue
			}
			d := bsoncore.NewDocumentBuilder().AppendInt32("shard", int32(s)).
				AppendInt64("count", sz.Count).AppendInt64("size", sz.Size).AppendInt64("storage", sz.Storage).Build()
			out = bsoncore.AppendDocumentElement(out, strconv.Itoa(n), d)
			n++
		}
		r.Out, _ = bsoncore.AppendArrayEnd(out, aidx)
		return nil
	case "count":
		r.Out = bsoncore.AppendInt64Element(r.Out, "n", h.Shards.OwnedDocCount(ci))
		return nil
	case "validate":
		full, _ := r.Body.Lookup("full").BooleanOK()
		opts := validate.Options{Full: full}
		opts.InFlight = func() func(shard int, hash uint64) bool { return h.Shards.InFlightAt(ci.Meta.ID) }
		res, err := validate.Run(ctx, h.Cat, ci, opts)
		if err == nil { // the vector search graphs of this node's shards, as validate's own
			var graphs []string
			graphs, err = h.Vectors.Validate(ci, h.Cat.Shards())
			res.Errors = append(res.Errors, graphs...)
		}
		if err != nil {
			return command.InterruptError(ctx, err)
		}
		r.Out = appendNodeValidate(r.Out, res)
		return nil
	default:
		return mongoerr.New(mongoerr.BadValue, "_cleaveShardStats: unknown what %q", what)
	}
}

// appendNodeValidate appends one node's validation for mergeValidate.
func appendNodeValidate(out []byte, res *validate.Result) []byte {
	out = bsoncore.AppendInt64Element(out, "records", res.Records)
	out = bsoncore.AppendInt64Element(out, "invalid", res.InvalidDocuments)
	aidx, out := bsoncore.AppendArrayElementStart(out, "indexes")
	for i, ir := range res.Indexes {
		out = bsoncore.AppendDocumentElement(out, strconv.Itoa(i), bsoncore.NewDocumentBuilder().
			AppendString("name", ir.Name).AppendInt64("keys", ir.Keys).
			AppendInt64("missing", ir.Missing).AppendInt64("extra", ir.Extra).Build())
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	out = route.AppendEntries(out, "extraIndexEntries", res.ExtraEntries)
	out = route.AppendEntries(out, "missingIndexEntries", res.MissingEntries)
	out = route.AppendStrings(out, "warnings", res.Warnings)
	return route.AppendStrings(out, "errors", res.Errors)
}

// shardWrite runs, on this node, the documents another node routed to its shards
// (insertRouted): {n, writeErrors, charge}.
func (h *Handlers) shardWrite(ctx context.Context, r *command.Request) error {
	ci, err := h.ownedColl(ctx, r, -1)
	if err != nil {
		return err
	}
	docs, _ := r.Body.Lookup("documents").ArrayOK()
	vals, err := docs.Values()
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "invalid documents array")
	}
	sa, _ := r.Body.Lookup("stmts").ArrayOK()
	sv, _ := sa.Values()
	if len(sv) != len(vals) {
		return mongoerr.New(mongoerr.BadValue, "_cleaveShardWrite: %d stmts for %d documents", len(sv), len(vals))
	}
	stmts := make([]int, len(sv))
	shards := h.Cat.Shards()
	for i, v := range sv {
		stmts[i] = int(v.Int32())
		if h, err := ci.ShardHash(vals[i].Document()); err == nil {
			s := ci.Map.Partition(ci.Map.Locate(h)).Shard
			if node, remote := shards[s].Node(); remote {
				return mongoerr.New(mongoerr.StaleConfig, "shard %d is on node %s, not this one", s, route.NodeName(node))
			}
		}
	}
	ordered, _ := r.Body.Lookup("ordered").BooleanOK()
	bypass, _ := r.Body.Lookup("bypassDocumentValidation").BooleanOK()
	rt, release, err := h.CheckoutRetryable(r)
	if err != nil {
		return err
	}
	defer release()
	wc := write.ParseConcern(r.Body)
	res := write.Results{}
	for start := 0; start < len(vals); start += write.InsertGroupDocs {
		end := min(start+write.InsertGroupDocs, len(vals))
		stop, err := h.Write.InsertStmts(ctx, ci, vals[start:end], stmts[start:end], ordered, bypass, wc, &res, rt)
		if err != nil {
			return err
		}
		if stop {
			break
		}
	}
	h.Counters.InsertedDocs.Add(res.N)
	r.Charge += res.Charge
	out := res.AppendReply(r.Out, false)
	r.Out = bsoncore.AppendDoubleElement(out, "charge", res.Charge)
	return nil
}
