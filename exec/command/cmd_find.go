package command

import (
	"context"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/project"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// defaultFirstBatch is the size of a cursor's first batch when the client does not say.
const defaultFirstBatch = 101

// findRun is what a find allocates: its arguments, query and cursor, and the plan and
// first shard stream its query opens, in one allocation (five for every point read, issue 13).
type findRun struct {
	a   findArgs
	q   query.Query
	c   cursor
	scr query.OpenScratch
}

// find runs the find command.
func (e *Server) find(ctx context.Context, r *Request) error {
	run := new(findRun)
	a := &run.a
	if err := parseFindInto(r.Body, a); err != nil {
		return err
	}
	if err := catalog.CheckCollation(a.collation); err != nil {
		return err
	}
	if e.IsView(r.DB, a.coll) { // view.go: an aggregation over the view's pipeline
		va, err := findAsAggregate(a)
		if err != nil {
			return err
		}
		va.explain = explainOnly(r)
		return e.runAggregate(ctx, r, va)
	}
	if explainOnly(r) {
		return e.explainFind(ctx, r, a)
	}
	if r.DB == "config" {
		if handled, err := e.findConfig(ctx, r, a); handled {
			return err
		}
	}
	ns := r.Conn.names.namespace(r.DB, a.coll)
	ci, err := e.Cat.Lookup(r.DB, a.coll)
	if err != nil {
		return err
	}
	q := &run.q
	if err := compileFindInto(ci, a, q); err != nil {
		return err
	}
	if ci == nil {
		return AppendCursorReply(r, ns, nil)
	}
	if a.tailable {
		return e.findTailable(ctx, r, a, ci, q) // cmd_tail.go
	}
	q.RecycleBuffers = true // the batches copy every document (cursor.fillBatch)
	q.Scratch = &run.scr
	stream, shards, err := e.QueryFor(r).OpenFind(q, query.FindKeys{Min: a.min, Max: a.max, ReturnKey: a.returnKey, ShowRecordID: a.showRecordID})
	if err != nil {
		return err
	}
	c := &run.c // zero: set field by field, as a struct assignment copies every field
	c.ns, c.stream, c.limit, c.noTimeout, c.coll = ns, stream, a.limit, a.noCursorTimeout, ci.Meta
	n := a.batchSize
	if n < 0 {
		n = defaultFirstBatch
	}
	ctx, cancel := query.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	if err := e.firstBatch(ctx, r, c, n, a.singleBatch); err != nil {
		return query.TimeLimitError(ctx, err)
	}
	for _, s := range shards {
		r.Charge += s.Stats.Charge()
	}
	return nil
}

// compileFind compiles a find's filter, sort and projection. ci may be nil (no collection):
// the arguments are still validated, as MongoDB does.
func compileFind(ci *catalog.Coll, a *findArgs) (*query.Query, error) {
	q := new(query.Query)
	if err := compileFindInto(ci, a, q); err != nil {
		return nil, err
	}
	return q, nil
}

// compileFindInto is compileFind into q, which is zero.
func compileFindInto(ci *catalog.Coll, a *findArgs, q *query.Query) error {
	coll, err := collationFor(a.collation, ci)
	if err != nil {
		return err
	}
	f, err := compileWriteFilter(a.filter, a.let, coll) // $expr sees the let variables
	if err != nil {
		return err
	}
	sortSpec, err := query.ParseSort(a.sort)
	if err != nil {
		return err
	}
	q.CI, q.Filter, q.Sort, q.Skip, q.Limit, q.Hint, q.AllowDiskUse = ci, f, sortSpec, a.skip, a.limit, a.hint, a.allowDiskUse
	if len(a.projection) > 5 {
		q.Proj, err = project.Compile(a.projection, &project.Options{Filter: f, Expr: expr.CompileValue})
		if err != nil {
			return err
		}
	}
	return nil
}

// firstBatch fills the first batch of cursor c, registers it if documents remain, and
// appends the cursor reply.
func (e *Server) firstBatch(ctx context.Context, r *Request, c *cursor, n int64, single bool) error {
	out, cidx, aidx := startCursorReply(r.Out, "firstBatch")
	exhausted := false
	if n != 0 { // batchSize 0: an empty first batch and a cursor
		var err error
		out, exhausted, err = c.fillBatch(ctx, out, n)
		if err != nil {
			c.Close()
			return err
		}
	}
	c.keepTimeLeft(ctx)
	var id int64
	if !c.keepOpen(exhausted) || single {
		c.Close()
	} else {
		c.lsid, c.hasSession = lsidOf(r.Body)
		if r.Conn.openCursors.Add(1) > MaxCursorsPerConnection {
			r.Conn.openCursors.Add(-1)
			c.Close()
			return mongoerr.New(mongoerr.OperationFailed, "Cannot open a new cursor: this connection already has %d open cursors (the limit); exhaust or kill some first", MaxCursorsPerConnection)
		}
		c.openedBy = &r.Conn.openCursors
		id = e.Cursors.add(c)
	}
	e.Counters.ReturnedDocs.Add(int64(countBatch(out[aidx:])))
	r.Out = endCursorReply(out, cidx, aidx, id, c.ns)
	return nil
}

// countBatch is a cheap count of the elements of an open array (for metrics): it walks the
// elements in place, without the terminating byte, so nothing is copied.
func countBatch(b []byte) int {
	if len(b) < 4 {
		return 0
	}
	n := 0
	for rest := b[4:]; len(rest) > 0; n++ {
		_, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			break
		}
		rest = r
	}
	return n
}

// startCursorReply opens {cursor: {<batch>: [ in out.
func startCursorReply(out []byte, batch string) ([]byte, int32, int32) {
	cidx, out := bsoncore.AppendDocumentElementStart(out, "cursor")
	aidx, out := bsoncore.AppendArrayElementStart(out, batch)
	return out, cidx, aidx
}

// endCursorReply closes the batch and adds id and ns.
func endCursorReply(out []byte, cidx, aidx int32, id int64, ns string) []byte {
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	out = bsoncore.AppendInt64Element(out, "id", id)
	out = bsoncore.AppendStringElement(out, "ns", ns)
	out, _ = bsoncore.AppendDocumentEnd(out, cidx)
	return out
}

// appendCursorReply appends a complete cursor reply with the given documents: an exhausted
// cursor (id 0) and its first batch.
func AppendCursorReply(r *Request, ns string, docs []bsoncore.Document) error {
	out, cidx, aidx := startCursorReply(r.Out, "firstBatch")
	for i, d := range docs {
		out = bsoncore.AppendDocumentElement(out, strconv.Itoa(i), d)
	}
	r.Out = endCursorReply(out, cidx, aidx, 0, ns)
	return nil
}

// getMore continues a cursor.
func (e *Server) getMore(ctx context.Context, r *Request) error {
	const cmd = "getMore"
	first, _ := bsonx.FirstElement(r.Body)
	id, ok := first.Value().Int64OK()
	if !ok {
		return args.WrongType(cmd, cmd, first.Value().Type, "long")
	}
	var coll string
	var batchSize int64
	haveColl := false
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "collection":
			haveColl = true
			coll, err = args.String(cmd, key, v)
		case "batchSize":
			batchSize, err = nonNegative(cmd, key, v)
		case "term", "lastKnownCommittedOpTime":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	if !haveColl {
		return args.Missing(cmd, "collection")
	}
	haveMaxTime, awaitTime := false, defaultAwaitData
	if v, err := r.Body.LookupErr("maxTimeMS"); err == nil {
		ms, err := maxTimeMS(cmd, v)
		if err != nil {
			return err
		}
		haveMaxTime, awaitTime = true, time.Duration(ms)*time.Millisecond
	}
	c, err := e.Cursors.Acquire(id)
	if err != nil {
		return err
	}
	ns := r.DB + "." + coll
	if c.ns != ns {
		e.Cursors.Done(c, false)
		return mongoerr.New(mongoerr.Unauthorized, "Requested getMore on namespace '%s', but cursor belongs to a different namespace %s", ns, c.ns)
	}
	if err := c.checkSession(r.Body); err != nil {
		e.Cursors.Done(c, false)
		return err
	}
	if haveMaxTime && !c.awaitData {
		// NB: tailable awaitData cursors are the only ones whose getMore takes maxTimeMS (as
		// the time to wait for new data, cmd_tail.go); mongos refuses it on the others and
		// kills the cursor, as any getMore that fails once the cursor is checked out.
		e.Cursors.Done(c, true)
		return mongoerr.New(mongoerr.BadValue, "maxTimeMS can only be used with getMore for tailable, awaitData cursors")
	}
	if err := e.checkCursorColl(c); err != nil {
		e.Cursors.Done(c, true) // mongod kills the cursor with its plan
		return err
	}
	ctx, cancel := c.deadline(ctx)
	defer cancel()
	if ctx.Err() != nil { // the opening command's maxTimeMS is spent
		e.Cursors.Done(c, true)
		return query.TimeLimitError(ctx, ctx.Err())
	}
	out, cidx, aidx := startCursorReply(r.Out, "nextBatch")
	var exhausted bool
	if c.awaitData {
		out, exhausted, err = c.fillAwait(ctx, out, batchSize, awaitTime)
	} else {
		out, exhausted, err = c.fillBatch(ctx, out, batchSize)
	}
	if err != nil {
		e.Cursors.Done(c, true)
		return query.TimeLimitError(ctx, err)
	}
	c.keepTimeLeft(ctx)
	exhausted = !c.keepOpen(exhausted)
	e.Cursors.Done(c, exhausted)
	if exhausted {
		id = 0
	}
	r.Out = endCursorReply(out, cidx, aidx, id, ns)
	return nil
}

// killCursors closes cursors.
func (e *Server) killCursors(_ context.Context, r *Request) error {
	const cmd = "killCursors"
	first, _ := bsonx.FirstElement(r.Body)
	coll, err := args.Collection(cmd, first.Value())
	if err != nil {
		return err
	}
	var ids []int64
	have := false
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "cursors" {
			return false, nil
		}
		have = true
		arr, ok := v.ArrayOK()
		if !ok {
			return true, args.WrongType(cmd, key, v.Type, "array")
		}
		vals, _ := arr.Values()
		for _, x := range vals {
			id, ok := x.Int64OK()
			if !ok {
				return true, args.WrongType(cmd, key, x.Type, "long")
			}
			ids = append(ids, id)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if !have {
		return args.Missing(cmd, "cursors")
	}
	ns := r.DB + "." + coll
	var killed, notFound []int64
	for _, id := range ids {
		if e.Cursors.removeIn(id, ns) {
			killed = append(killed, id)
		} else {
			notFound = append(notFound, id)
		}
	}
	r.Out = appendInt64Array(r.Out, "cursorsKilled", killed)
	r.Out = appendInt64Array(r.Out, "cursorsNotFound", notFound)
	r.Out = appendInt64Array(r.Out, "cursorsAlive", nil)
	r.Out = appendInt64Array(r.Out, "cursorsUnknown", nil)
	return nil
}

// appendInt64Array appends an array of int64 values.
func appendInt64Array(dst []byte, key string, vals []int64) []byte {
	aidx, dst := bsoncore.AppendArrayElementStart(dst, key)
	for i, v := range vals {
		dst = bsoncore.AppendInt64Element(dst, strconv.Itoa(i), v)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	return dst
}

// explainOnly reports whether r is the inner command of an explain.
func explainOnly(r *Request) bool { return r.Explain != "" }

// findConfig runs before a find on the config database: it refreshes the collection the
// find reads when it is one of the derived ones, then lets the find read it (handled false).
//
//nolint:unparam // find's hook may answer by itself; the derived collections never need to
func (e *Server) findConfig(_ context.Context, _ *Request, a *findArgs) (handled bool, err error) {
	for _, n := range sharding.ConfigColls {
		if n == a.coll {
			return false, e.Shards.SyncConfig(n)
		}
	}
	return false, nil
}
