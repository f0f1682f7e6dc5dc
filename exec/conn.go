package exec

import (
	"context"
	"errors"
	"runtime/debug"
	"slices"
	"time"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/clock"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/failpoint"
	"github.com/cleavedb/cleave/exec/params"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Connect implements wire.Handler.
func (e *Executor) Connect(info wire.ConnInfo) wire.ConnHandler {
	c := &command.Conn{
		Info: info,
		Log:  e.Log.With(zap.Int64("conn_id", info.ID)),
	}
	e.Conns.Store(info.ID, c)
	return &conn{e: e, c: c, mem: e.Memory.NewReservation()}
}

// conn runs one client connection's commands, one at a time, over its state (Conn), and
// keeps the reply buffer it reuses from request to request.
type conn struct {
	e    *Executor
	c    *command.Conn
	out  []byte
	fork bool // a pipelined connection's handler of one request at a time (Fork)
	// mem is the reply's share of the memory account, released once the wire layer is done
	// with the reply: at the next request or at Close.
	mem *stream.Reservation
	// req is the request being run, kept here so that it is not allocated for every
	// command (dispatch's table of functions makes it escape): nothing keeps a *Request
	// past Handle, which ends it before returning (command.Request.End, which poisons it in
	// a race-enabled build; exec/command's TestRequestNotRetained checks the sources).
	req command.Request
	// killable is the cancellable context the connection's requests run under (killOp's
	// handle: kill), derived from parent, the context the wire layer hands Handle, and
	// reused from request to request until something cancels it (killOp, the client gone):
	// a context per command was two of a find's five allocations. NB: a struct holding a
	// context, which the code otherwise avoids: this one is the connection's, not a request's.
	killable, parent context.Context
	kill             context.CancelCauseFunc
}

// maxRetainedReply is the largest reply buffer a connection keeps between requests; a
// larger one (a big cursor batch) is dropped so that idle connections stay small.
const maxRetainedReply = 1 << 20

// Handle implements wire.ConnHandler: it runs one command and builds its reply.
func (h *conn) Handle(ctx context.Context, req *wire.Request) (bsoncore.Document, error) {
	c := h.c
	if cap(h.out) > maxRetainedReply {
		h.out = nil
	}
	start := time.Now()
	h.mem.Release() // the previous reply is sent
	r := &h.req
	*r = command.Request{Conn: c, Body: req.Body, RequestID: req.RequestID, Legacy: req.Legacy, Wire: req, Mem: h.mem}
	defer r.End() // nothing of the request outlives it (poisoned in a race-enabled build)
	idx, out := bsoncore.AppendDocumentStart(h.out[:0])
	r.Out = out
	kill := req.Cancel // killOp's handle on the command: the request's own context's, if it has one
	if kill == nil {
		ctx, kill = h.requestContext(ctx)
	}
	c.Begin(req.Body, start, kill)
	err := h.e.dispatch(ctx, r)
	c.End() // after it, killOp no longer reaches kill
	if !errors.Is(err, failpoint.ErrCloseConnection) {
		err = command.InterruptError(ctx, err)
		err = catalog.StoreError(err) // a full disk or a failed commit, wherever it surfaced
	}
	if req.Cancel != nil {
		kill(nil)
	}
	if errors.Is(err, failpoint.ErrCloseConnection) {
		h.finish(r, start, err)
		return nil, err // the wire layer closes the socket without a reply
	}
	out = r.Out
	if err != nil {
		merr := mongoerr.From(err)
		if merr.Code == mongoerr.InternalError && merr.Unwrap() != nil {
			c.Log.Error("command failed", zap.Int32("request_id", req.RequestID),
				zap.String("cmd", r.Name), zap.Error(merr.Unwrap()))
		}
		out = merr.AppendReply(out[:idx+4])
	} else {
		out = r.Txn.AppendRecoveryToken(out)
		out = appendAtClusterTime(r, out, int(idx))
		out = bsoncore.AppendDoubleElement(out, "ok", 1)
	}
	if !r.Legacy {
		t := h.e.Clock.Now()
		switch {
		case r.OperationTime != 0:
			t = r.OperationTime
		case r.Wrote:
			t = h.e.Clock.Tick()
		}
		out = clock.AppendClusterTime(out, t)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	h.out = out
	h.finish(r, start, err)
	if r.Done != nil {
		r.Done.Release() // after finish, which reads r.Plan
	}
	return out, nil
}

// requestContext returns the context a request runs under, and the kill that ends it with a
// cause (killOp's errKilled): the connection's context derived from parent, kept while
// nothing has cancelled it. A request does not cancel it when it ends, so a context derived
// from it must be cancelled by whoever derived it (as go vet's lostcancel asks); what a
// command leaves behind must not wait for its request's context to end (a cursor's reader
// has its own).
func (h *conn) requestContext(parent context.Context) (context.Context, context.CancelCauseFunc) {
	if h.killable == nil || h.parent != parent || h.killable.Err() != nil {
		if h.kill != nil {
			h.kill(nil) // a new parent: detach the old context from the old one
		}
		h.killable, h.kill = context.WithCancelCause(parent)
		h.parent = parent
	}
	return h.killable, h.kill
}

// finish records the statistics of a finished command and logs it: at Info when it was
// slow, at Debug otherwise.
func (h *conn) finish(r *command.Request, start time.Time, err error) {
	c := h.c
	d := time.Since(start)
	h.e.Metrics().Observe(r.Name, d, err)
	if r.Name != "getLastRequestStatistics" {
		c.Last = command.RequestStats{Command: r.Name, Duration: d, Charge: r.Charge}
	}
	level := zap.DebugLevel
	var plan string
	if h.e.SlowOps.Slow(d) && !r.Awaited {
		level = zap.InfoLevel
		op := slowOp(r, d, err)
		plan = op.PlanSummary
		h.e.SlowOps.Record(op)
	}
	ce := c.Log.Check(level, "command")
	if ce == nil {
		return
	}
	fields := []zap.Field{
		zap.Int32("request_id", r.RequestID), zap.String("cmd", r.Name), zap.String("db", r.DB),
		zap.Duration("duration", d), zap.Float64("ru", r.Charge),
	}
	if plan != "" {
		fields = append(fields, zap.String("planSummary", plan))
	}
	fields = appendDefaultConcerns(fields, r)
	if err != nil {
		e := mongoerr.From(err)
		fields = append(fields, zap.Int32("code", int32(e.Code)), zap.String("errmsg", e.Message))
	}
	ce.Write(fields...)
}

// appendDefaultConcerns adds to a command's log fields the read and write concerns it ran
// under when they were the cluster-wide defaults, with MongoDB's provenance
// ("customDefault"), as a slow query's log line shows them:
// "writeConcern":{"w":"majority","wtimeout":0,"provenance":"customDefault"}.
func appendDefaultConcerns(fields []zap.Field, r *command.Request) []zap.Field {
	if r.DefaultRC {
		fields = append(fields, zap.Object("readConcern", defaultConcern(r.Body.Lookup("readConcern").Document())))
	}
	if r.DefaultWC {
		fields = append(fields, zap.Object("writeConcern", defaultConcern(r.Body.Lookup("writeConcern").Document())))
	}
	return fields
}

// defaultConcern logs a concern that came from the defaults.
type defaultConcern bsoncore.Document

// MarshalLogObject implements zapcore.ObjectMarshaler.
func (c defaultConcern) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	elems, _ := bsoncore.Document(c).Elements()
	for _, el := range elems {
		v := el.Value()
		if n, ok := v.AsInt64OK(); ok {
			enc.AddInt64(el.Key(), n)
		} else if s, ok := v.StringValueOK(); ok {
			enc.AddString(el.Key(), s)
		} else if b, ok := v.BooleanOK(); ok {
			enc.AddBool(el.Key(), b)
		} else {
			enc.AddString(el.Key(), v.String())
		}
	}
	enc.AddString("provenance", "customDefault")
	return nil
}

// slowOp describes a slow command for the console's list: its namespace is the database
// and, when the command names one by its first field, the collection.
func slowOp(r *command.Request, d time.Duration, err error) params.SlowOp {
	op := params.SlowOp{Time: time.Now(), Command: r.Name, NS: r.DB, Duration: d, RU: r.Charge}
	if first, ok := bsonx.FirstElement(r.Body); ok {
		if coll, ok := first.Value().StringValueOK(); ok && coll != "" {
			op.NS += "." + coll
		}
	}
	if r.Plan != nil {
		op.PlanSummary = r.Plan.Summary()
	}
	if err != nil {
		op.Error = mongoerr.From(err).Code.String()
	}
	return op
}

// Close implements wire.ConnHandler.
func (h *conn) Close() {
	if h.fork {
		h.e.Conns.Delete(h.c)
	} else {
		h.e.Conns.Delete(h.c.Info.ID)
	}
	h.out = nil
	h.mem.Release()
	if h.kill != nil {
		h.kill(nil)
		h.killable, h.parent, h.kill = nil, nil, nil
	}
}

// Fork implements wire.Forker: the handler of one request at a time of a pipelined internal
// connection (wire.Request.Concurrent), with the connection's authentication and state of
// its own. A fork is in e.Conns under its Conn (the connection's id is its parent's), so
// currentOp lists the requests it runs, under the connection's id, and killOp reaches them.
func (h *conn) Fork() wire.ConnHandler {
	c := &command.Conn{Info: h.c.Info, Log: h.c.Log, Compressors: h.c.Compressors, SeenHello: h.c.SeenHello}
	c.Authn.Users = slices.Clone(h.c.Authn.Users)
	h.e.Conns.Store(c, c)
	return &conn{e: h.e, c: c, fork: true, mem: h.e.Memory.NewReservation()}
}

// Inline implements wire.Inliner: a Direct command whose Brief says so runs on the goroutine
// reading its pipelined internal connection, unless the failCommand failpoint is armed (it
// may hold it, and the reader must stay free to read the cancel of a held request).
func (h *conn) Inline(body []byte) bool {
	if h.e.Fail.Armed() {
		return false
	}
	first, ok := bsonx.FirstElement(body)
	if !ok {
		return false
	}
	cmd, _ := h.e.Commands.Lookup(first.KeyBytes())
	return cmd.Has(command.Direct) && cmd.Brief != nil && cmd.Brief(body)
}

// recoverPanic turns a panic in a command into an InternalError reply and a log line with
// the stack, so that no input crashes the server.
func recoverPanic(r *command.Request, err *error) {
	p := recover()
	if p == nil {
		return
	}
	r.Conn.Log.Error("command panicked", zap.Int32("request_id", r.RequestID), zap.String("cmd", r.Name),
		zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
	*err = mongoerr.New(mongoerr.InternalError, "internal error while running %s", r.Name)
}
