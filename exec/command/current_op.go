package command

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The operations in progress, for $currentOp (and mongosh's db.currentOp()): each connection
// publishes the command it is running; $currentOp copies what it finds under the
// connection's lock, so a command's body is never read after its request buffer is reused.

// opState is a connection's part of the registry: the command it runs, if any. It is set
// and cleared around every command without allocating.
type opState struct {
	mu     sync.Mutex
	active bool
	opid   int64
	start  time.Time
	body   bsoncore.Document // the request's, valid while active
	// kill interrupts the running command (killOp); valid while active.
	kill context.CancelCauseFunc
}

// errKilled is the cause of a command's context cancelled by killOp.
var errKilled = errors.New("operation killed by killOp")

// nextOpID numbers operations as mongod's opid does.
var nextOpID atomic.Int64

// begin publishes the command body as c's running command, which kill interrupts.
func (c *Conn) begin(body bsoncore.Document, start time.Time, kill context.CancelCauseFunc) {
	id := nextOpID.Add(1)
	c.ops.mu.Lock()
	c.ops.active, c.ops.opid, c.ops.start, c.ops.body, c.ops.kill = true, id, start, body, kill
	c.ops.mu.Unlock()
}

// end withdraws c's running command.
func (c *Conn) end() {
	c.ops.mu.Lock()
	c.ops.active, c.ops.body, c.ops.kill = false, nil, nil
	c.ops.mu.Unlock()
}

// killOp interrupts c's running command if its opid is id, and reports whether it did.
func (c *Conn) killOp(id int64) bool {
	c.ops.mu.Lock()
	defer c.ops.mu.Unlock()
	if !c.ops.active || c.ops.opid != id || c.ops.kill == nil {
		return false
	}
	c.ops.kill(errKilled)
	return true
}

// currentOps returns a $currentOp document per connection running a command (every
// connection with idle), in connection order.
func (e *Server) currentOps(idle bool) []bsoncore.Document {
	var docs []bsoncore.Document
	now := time.Now()
	e.Conns.Range(func(_, v any) bool {
		if d := v.(*Conn).currentOpDoc(now, idle, e); d != nil {
			docs = append(docs, d)
		}
		return true
	})
	sort.Slice(docs, func(i, j int) bool {
		return docs[i].Lookup("connectionId").Int64() < docs[j].Lookup("connectionId").Int64()
	})
	return docs
}

// currentOpStage is $currentOp: one document per connection running a command (every
// connection with idleConnections: true).
type CurrentOpStage struct {
	raw      bsoncore.Value
	e        *Server
	idleConn bool
}

// parseCurrentOpStage parses {$currentOp: {allUsers?, idleConnections?, idleCursors?,
// idleSessions?, localOps?, truncateOps?, backtrace?}}.
func (e *Server) ParseCurrentOpStage(env *agg.Env, _ string, arg bsoncore.Value) (agg.Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$currentOp options must be specified in an object, but found: %s", arg.Type)
	}
	s := &CurrentOpStage{raw: arg, e: e}
	elems, _ := d.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "idleConnections":
			b, ok := el.Value().BooleanOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.FailedToParse, "The 'idleConnections' parameter of the $currentOp stage must be a boolean value, but found: %s", el.Value().Type)
			}
			s.idleConn = b
		case "allUsers", "idleCursors", "idleSessions", "localOps", "truncateOps", "backtrace", "targetAllNodes":
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Unrecognized option '%s' in $currentOp stage.", el.Key())
		}
	}
	if env.DB != "admin" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
	}
	return s, nil
}

// Open implements agg.Stage; the stage is a source, so it ignores its input.
func (s *CurrentOpStage) Open(in stream.Stream) (stream.Stream, error) {
	in.Close()
	return &stream.Slice{Docs: s.e.currentOps(s.idleConn)}, nil
}

// Spec implements agg.Stage.
func (s *CurrentOpStage) Spec() bsoncore.Document { return agg.StageSpec("$currentOp", s.raw) }

// currentOpDoc describes what c is doing now, or nil when it is idle and idle connections
// are not wanted.
func (c *Conn) currentOpDoc(now time.Time, idle bool, e *Server) bsoncore.Document {
	c.ops.mu.Lock()
	defer c.ops.mu.Unlock()
	op := &c.ops
	if !op.active && !idle {
		return nil
	}
	b := bsoncore.NewDocumentBuilder().AppendString("type", "op").
		AppendString("host", e.ListenAddr()).AppendString("desc", "conn"+strconv.FormatInt(c.Info.ID, 10)).
		AppendInt64("connectionId", c.Info.ID)
	if c.Info.Remote != nil {
		b.AppendString("client", c.Info.Remote.String())
	}
	if c.appName != "" {
		b.AppendString("appName", c.appName)
	}
	b.AppendBoolean("active", op.active)
	if op.active {
		db, _ := op.body.Lookup("$db").StringValueOK()
		d := now.Sub(op.start)
		b.AppendInt64("opid", op.opid).
			AppendInt64("secs_running", int64(d/time.Second)).
			AppendInt64("microsecs_running", d.Microseconds()).
			AppendString("op", "command").
			AppendString("ns", db+".$cmd").
			AppendDocument("command", append(bsoncore.Document(nil), redactSecrets(op.body)...))
	}
	return b.Build()
}

// Collectionless implements agg.Collectionless: $currentOp reads no collection.
func (s *CurrentOpStage) Collectionless() {}

// currentOpCommand answers {currentOp: 1, $all?, <filter>...} on admin: {inprog: [...]}, the
// documents of $currentOp ($all: true includes idle connections) that match the filter the
// other fields make, as mongod's currentOp command does.
func (e *Server) CurrentOpCommand(_ context.Context, r *Request) error {
	const cmd = "currentOp"
	idle := false
	fb := bsoncore.NewDocumentBuilder()
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		switch key {
		case cmd:
			return true, nil
		case "$all":
			b, err := args.Bool(cmd, key, v)
			idle = b
			return true, err
		case "$ownOps", "$truncateOps", "$localOps", "$allUsers":
			return true, nil
		}
		if strings.HasPrefix(key, "$") {
			return false, nil // $db, lsid and the other generic fields
		}
		fb.AppendValue(key, v)
		return true, nil
	})
	if err != nil {
		return err
	}
	f, err := query.CompileFilter(fb.Build())
	if err != nil {
		return err
	}
	aidx, out := bsoncore.AppendArrayElementStart(r.Out, "inprog")
	i := 0
	for _, d := range e.currentOps(idle) {
		if ok, err := f.MatchErr(d); err != nil {
			return err
		} else if ok {
			out = bsoncore.AppendDocumentElement(out, strconv.Itoa(i), d)
			i++
		}
	}
	r.Out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return nil
}

// killOpCommand answers {killOp: 1, op: <opid>} on admin: the command running with that opid
// is interrupted (it fails with 11601 Interrupted at its next check); MongoDB answers
// "attempting to kill op" whether or not the op still runs. A mongos-style "shard:opid"
// string is accepted too.
func (e *Server) KillOpCommand(_ context.Context, r *Request) error {
	const cmd = "killOp"
	v, err := r.Body.LookupErr("op")
	if err != nil {
		return args.Missing(cmd, "op")
	}
	var id int64
	switch v.Type {
	case bsoncore.TypeString:
		s := v.StringValue()
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			s = s[i+1:]
		}
		if id, err = strconv.ParseInt(s, 10, 64); err != nil {
			return mongoerr.New(mongoerr.BadValue, "invalid op : %s", v.StringValue())
		}
	default:
		n, ok := bsonx.NumberAsInt64(v)
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "Did not provide \"op\" field")
		}
		id = n
	}
	e.Conns.Range(func(_, c any) bool { return !c.(*Conn).killOp(id) })
	r.Out = bsoncore.AppendStringElement(r.Out, "info", "attempting to kill op")
	return nil
}
