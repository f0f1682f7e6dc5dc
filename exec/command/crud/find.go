package crud

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/match"
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
	c   cursor.Cursor
	scr query.OpenScratch
	flt match.Scratch // q.Filter when it is one equality (a find by _id)
}

// findRuns are the findRuns of finished finds (findRun.Release): a point read's is 2 KiB,
// most of the bytes it allocated (BenchmarkFindByID: 3,253 B/op, 7 allocs/op).
var findRuns = sync.Pool{New: func() any { return new(findRun) }}

// Release implements command.Releaser: the find is over and left nothing open that points
// into run (done).
func (run *findRun) Release() {
	*run = findRun{}
	findRuns.Put(run)
}

// done tells whether a find that answered from run leaves nothing that points into it once
// its request ends: no registered cursor, and no stream whose reader goroutine or remote
// connection might finish closing after Close returns (only one local shard's stream, read
// without prefetch).
func (run *findRun) done(shards []*query.ShardStream) bool {
	if run.c.ID != 0 || len(shards) > 1 {
		return false
	}
	return len(shards) == 0 || !shards[0].IsRemote() && !shards[0].Prefetching()
}

// find runs the find command.
func (h *Handlers) find(ctx context.Context, r *command.Request) error {
	run := findRuns.Get().(*findRun) //nolint:forcetypeassert // the pool holds only *findRun
	a := &run.a
	if err := parseFindInto(r.Body, a); err != nil {
		return err
	}
	a.allowDiskUse = h.diskUse(a.allowDiskUse, a.allowDiskUseSet)
	if err := catalog.CheckCollation(a.collation); err != nil {
		return err
	}
	if h.IsView(r.DB, a.coll) { // view.go: an aggregation over the view's pipeline
		va, err := findAsAggregate(a)
		if err != nil {
			return err
		}
		va.explain = explainOnly(r)
		return h.runAggregate(ctx, r, va)
	}
	if explainOnly(r) {
		return h.explainFind(ctx, r, a)
	}
	if r.DB == "config" {
		if handled, err := h.findConfig(ctx, r, a); handled {
			return err
		}
	}
	ns := r.Conn.Names.Namespace(r.DB, a.coll)
	ci, err := h.Cat.Lookup(r.DB, a.coll)
	if err != nil {
		return err
	}
	q := &run.q
	if err := compileFindInto(ci, a, q, &run.flt); err != nil {
		return err
	}
	if ci == nil {
		return command.AppendCursorReply(r, ns, nil)
	}
	if a.tailable {
		return h.findTailable(ctx, r, a, ci, q) // tail.go
	}
	q.RecycleBuffers = true // the batches copy every document (cursor.fillBatch)
	q.Scratch = &run.scr
	stream, shards, err := h.QueryFor(r).OpenFind(q, query.FindKeys{Min: a.min, Max: a.max, ReturnKey: a.returnKey, ShowRecordID: a.showRecordID})
	if err != nil {
		return err
	}
	c := &run.c // zero: set field by field, as a struct assignment copies every field
	c.Ns, c.Stream, c.Limit, c.NoTimeout, c.Coll = ns, stream, a.limit, a.noCursorTimeout, ci.Meta
	c.Yields = r.Txn == nil && r.Snap == nil
	n := a.batchSize
	if n < 0 {
		n = defaultFirstBatch
	}
	ctx, cancel := h.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	if len(shards) > 0 {
		r.Plan = shards[0].Plan()
	}
	if err := h.FirstBatch(ctx, r, c, n, a.singleBatch); err != nil {
		return query.TimeLimitError(ctx, err)
	}
	for _, s := range shards {
		r.Charge += s.Stats.Charge()
	}
	if run.done(shards) {
		r.Done = run
	}
	return nil
}

// compileFind compiles a find's filter, sort and projection. ci may be nil (no collection):
// the arguments are still validated, as MongoDB does.
func compileFind(ci *catalog.Coll, a *findArgs) (*query.Query, error) {
	q := new(query.Query)
	if err := compileFindInto(ci, a, q, nil); err != nil {
		return nil, err
	}
	return q, nil
}

// compileFindInto is compileFind into q, which is zero; a filter of one equality is built in
// sc (nil: allocated).
func compileFindInto(ci *catalog.Coll, a *findArgs, q *query.Query, sc *match.Scratch) error {
	coll, err := CollationFor(a.collation, ci)
	if err != nil {
		return err
	}
	f, err := compileFilterTimedInto(context.Background(), a.filter, a.let, coll, a.maxTimeMS, sc) // $expr sees the let variables
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

// getMore continues a cursor.
func (h *Handlers) getMore(ctx context.Context, r *command.Request) error {
	a, err := parseGetMore(r)
	if err != nil {
		return err
	}
	id, coll, batchSize, haveMaxTime, awaitTime := a.id, a.coll, a.batchSize, a.haveMaxTime, a.awaitTime
	c, err := h.Cursors.Acquire(id)
	if err != nil {
		return err
	}
	if h.Access.Enabled() {
		if err := c.CheckUsers(r.Conn.Authn.Users); err != nil {
			h.Cursors.Done(c, false) // mongos refuses the checkout: the cursor lives on
			return err
		}
	}
	ns := r.DB + "." + coll
	if c.Ns != ns {
		h.Cursors.Done(c, false)
		return mongoerr.New(mongoerr.Unauthorized, "Requested getMore on namespace '%s', but cursor belongs to a different namespace %s", ns, c.Ns)
	}
	if err := c.CheckSession(r.Body); err != nil {
		h.Cursors.Done(c, false)
		return err
	}
	if haveMaxTime && !c.AwaitData {
		// NB: tailable awaitData cursors are the only ones whose getMore takes maxTimeMS (as
		// the time to wait for new data, tail.go); mongos refuses it on the others and
		// kills the cursor, as any getMore that fails once the cursor is checked out.
		h.Cursors.Done(c, true)
		return mongoerr.New(mongoerr.BadValue, "maxTimeMS can only be used with getMore for tailable, awaitData cursors")
	}
	if err := h.CheckCursorColl(c); err != nil {
		h.Cursors.Done(c, true) // mongod kills the cursor with its plan
		return err
	}
	if err := h.GetMoreCheckedOut(ctx, r, c); err != nil {
		h.Cursors.Done(c, true)
		return command.LabelResumable(c, err)
	}
	ctx, cancel := c.Deadline(ctx)
	defer cancel()
	if ctx.Err() != nil { // the opening command's maxTimeMS is spent
		h.Cursors.Done(c, true)
		return query.TimeLimitError(ctx, ctx.Err())
	}
	out, cidx, aidx := command.StartCursorReply(r.Out, "nextBatch")
	var exhausted bool
	if c.AwaitData {
		out, exhausted, err = c.FillAwait(ctx, out, batchSize, awaitTime, r.Mem)
	} else {
		out, exhausted, err = c.FillBatch(ctx, out, batchSize, r.Mem)
	}
	if err != nil {
		h.Cursors.Done(c, true)
		return command.LabelResumable(c, query.TimeLimitError(ctx, err))
	}
	if c.Charged != nil {
		r.Charge += c.Charged()
	}
	c.KeepTimeLeft(ctx)
	exhausted = !c.KeepOpen(exhausted)
	if !exhausted {
		c.Yield()
	}
	h.Cursors.Done(c, exhausted)
	if exhausted {
		id = 0
	}
	r.Out = command.EndCursorReplyOf(out, cidx, aidx, c, id)
	return nil
}

// getMoreArgs are the parsed arguments of a getMore command.
type getMoreArgs struct {
	id          int64
	coll        string
	batchSize   int64
	haveMaxTime bool          // maxTimeMS was given: only an awaitData cursor takes it
	awaitTime   time.Duration // how long an awaitData cursor waits for new documents
}

// parseGetMore parses a getMore command.
func parseGetMore(r *command.Request) (*getMoreArgs, error) {
	const cmd = "getMore"
	first, _ := bsonx.FirstElement(r.Body)
	id, ok := first.Value().Int64OK()
	if !ok {
		return nil, args.WrongType(cmd, cmd, first.Value().Type, "long")
	}
	a := &getMoreArgs{id: id, awaitTime: defaultAwaitData}
	haveColl := false
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "collection":
			haveColl = true
			a.coll, err = args.String(cmd, key, v)
		case "batchSize":
			a.batchSize, err = nonNegative(cmd, key, v)
		case "term", "lastKnownCommittedOpTime":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if !haveColl {
		return nil, args.Missing(cmd, "collection")
	}
	if v, err := r.Body.LookupErr("maxTimeMS"); err == nil {
		ms, err := command.MaxTimeMS(cmd, v)
		if err != nil {
			return nil, err
		}
		a.haveMaxTime, a.awaitTime = true, time.Duration(ms)*time.Millisecond
	}
	return a, nil
}

// killCursors closes cursors.
func (h *Handlers) killCursors(_ context.Context, r *command.Request) error {
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
	may := func(*cursor.Cursor) error { return nil }
	if h.Access.Enabled() {
		// Only a user who opened a cursor kills it, or one who may kill any (MongoDB's
		// killAnyCursor, which cleave's cluster administration grants).
		anyCursor := h.Access.Allowed(&r.Conn.Authn, []auth.Need{{Action: auth.ActionClusterAdmin}})
		may = func(c *cursor.Cursor) error { return c.CheckKill(r.Conn.Authn.Users, anyCursor) }
	}
	var killed, notFound []int64
	for _, id := range ids {
		ok, err := h.Cursors.RemoveInIf(id, ns, may)
		switch {
		case err != nil:
			return err // as mongos: the command fails, the cursors before it are killed
		case ok:
			killed = append(killed, id)
		default:
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
func explainOnly(r *command.Request) bool { return r.Explain != "" }

// findConfig runs before a find on the config database: it refreshes the collection the
// find reads when it is one of the derived ones, then lets the find read it (handled false).
//
//nolint:unparam // find's hook may answer by itself; the derived collections never need to
func (h *Handlers) findConfig(_ context.Context, _ *command.Request, a *findArgs) (handled bool, err error) {
	for _, n := range sharding.ConfigColls {
		if n == a.coll {
			return false, h.Shards.SyncConfig(n)
		}
	}
	return false, nil
}
