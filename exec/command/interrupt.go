package command

import (
	"context"
	"errors"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A command ends early when its context does: its maxTimeMS passed (query.Deadline) or its
// client disconnected (the wire server cancels the connection's context when it sees the
// socket close while a command runs). Long loops check the context: scans every few hundred
// documents, writes before each group's key locks and while waiting for them, index builds
// between batches. What the command committed before stays committed; nothing is applied
// after the command has failed.

// InterruptError maps err, a failure of a command whose context may have ended, to the error
// MongoDB answers: Interrupted (11601) when killOp killed it, MaxTimeMSExpired (50) past
// maxTimeMS, ClientDisconnect (279) when the client went away; any other error is returned as
// is.
func InterruptError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(context.Cause(ctx), errKilled):
		return mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
	case errors.Is(ctx.Err(), context.Canceled), errors.Is(err, context.Canceled):
		return mongoerr.New(mongoerr.ClientDisconnect, "operation was interrupted because a client disconnected")
	}
	return err
}

// Deadline applies a command's maxTimeMS (0: none) to ctx, as query.Deadline does, unless
// the maxTimeAlwaysTimeOut failpoint is on: then the context is expired from the start and
// the command fails with MaxTimeMSExpired at its first check (failpoint.MaxTime).
func (e *Server) Deadline(ctx context.Context, maxTimeMS int64) (context.Context, context.CancelFunc) {
	return e.MaxTimeAlways.Deadline(ctx, maxTimeMS)
}

// LockDDL takes the DDL lock for command cmd, whose body may give maxTimeMS (nil: none), giving
// up with MongoDB's answer when the command's time limit passes first (MaxTimeMSExpired), or
// its context ends (killOp, the client gone): an index build holds the lock to its end, and a
// move into this node from another holds it until its commit, or until its source is given
// up for dead.
func (e *Server) LockDDL(ctx context.Context, cmd string, body bsoncore.Document) (unlock func(), err error) {
	wctx, cancel, err := e.MaxTimeContext(ctx, cmd, body)
	if err != nil {
		return nil, err
	}
	defer cancel()
	unlock, err = e.Cat.LockDDLCtx(wctx)
	if err != nil {
		return nil, InterruptError(wctx, err)
	}
	return unlock, nil
}

// MaxTimeContext applies the maxTimeMS that body, the body of command cmd, may give to ctx
// (Deadline); a bad value is MaxTimeMS's error.
func (e *Server) MaxTimeContext(ctx context.Context, cmd string, body bsoncore.Document) (context.Context, context.CancelFunc, error) {
	var limit int64
	if v, err := body.LookupErr("maxTimeMS"); err == nil {
		if limit, err = MaxTimeMS(cmd, v); err != nil {
			return nil, nil, err
		}
	}
	ctx, cancel := e.Deadline(ctx, limit)
	return ctx, cancel, nil
}

// MaxTimeMS parses the generic maxTimeMS argument of command cmd: a non-negative 32-bit
// integer. As MongoDB 7.0 (parseMaxTimeMS): a non-number is the IDL's TypeMismatch, null, a
// value out of range (checked on the truncated value first) or a fraction are BadValue:
//
//	{maxTimeMS: -1} → -1 value for maxTimeMS is out of range [0, 2147483647]
func MaxTimeMS(cmd string, v bsoncore.Value) (int64, error) {
	switch v.Type {
	case bsoncore.TypeNull:
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS must be a number")
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
	default:
		return 0, args.WrongType(cmd, "maxTimeMS", v.Type, args.NumberTypes...)
	}
	n, err := args.Int64(cmd, "maxTimeMS", v)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, mongoerr.New(mongoerr.BadValue, "%d value for maxTimeMS is out of range [0, %d]", n, math.MaxInt32)
	}
	if f, ok := v.DoubleOK(); ok && f != math.Trunc(f) {
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS has non-integral value")
	}
	return n, nil
}

// MaxTimeMSNonNegative parses maxTimeMS where the command's own IDL declares it with the
// validator gte: 0 (aggregate): the IDL refuses a negative value, whatever its numeric type,
// with Location51024 before the generic parse sees it; the rest is MaxTimeMS.
//
//	{aggregate: …, maxTimeMS: NumberLong(-1)} → BSON field 'maxTimeMS' value must be >= 0, actual value '-1'
func MaxTimeMSNonNegative(cmd string, v bsoncore.Value) (int64, error) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		if n, err := args.Int64(cmd, "maxTimeMS", v); err == nil && n < 0 {
			return 0, mongoerr.New(mongoerr.Location51024, "BSON field 'maxTimeMS' value must be >= 0, actual value '%d'", n)
		}
	}
	return MaxTimeMS(cmd, v)
}
