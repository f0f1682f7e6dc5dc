package command

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/wire"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
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

// Begin publishes the command body as c's running command, which kill interrupts.
func (c *Conn) Begin(body bsoncore.Document, start time.Time, kill context.CancelCauseFunc) {
	id := nextOpID.Add(1)
	c.ops.mu.Lock()
	c.ops.active, c.ops.opid, c.ops.start, c.ops.body, c.ops.kill = true, id, start, body, kill
	c.ops.mu.Unlock()
}

// End withdraws c's running command.
func (c *Conn) End() {
	c.ops.mu.Lock()
	c.ops.active, c.ops.body, c.ops.kill = false, nil, nil
	c.ops.mu.Unlock()
}

// KillOp interrupts c's running command if its opid is id, and reports whether it did.
func (c *Conn) KillOp(id int64) bool {
	c.ops.mu.Lock()
	defer c.ops.mu.Unlock()
	if !c.ops.active || c.ops.opid != id || c.ops.kill == nil {
		return false
	}
	c.ops.kill(errKilled)
	return true
}

// CurrentOps returns a $currentOp document per connection running a command (every
// connection with idle), in connection order.
func (e *Server) CurrentOps(idle bool) []bsoncore.Document {
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
	if e.BackgroundOps != nil {
		docs = append(docs, e.BackgroundOps()...)
	}
	return docs
}

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
			AppendDocument("command", append(bsoncore.Document(nil), RedactSecrets(op.body)...))
	}
	return b.Build()
}

// RedactSecrets returns body with a top-level pwd replaced by "xxx", as MongoDB redacts
// commands in messages and currentOp; body itself when it holds none.
func RedactSecrets(body bsoncore.Document) bsoncore.Document {
	if _, err := body.LookupErr("pwd"); err != nil {
		return body
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	elems, _ := body.Elements()
	for _, el := range elems {
		if el.Key() == "pwd" {
			out = bsoncore.AppendStringElement(out, "pwd", "xxx")
			continue
		}
		out = append(out, el...)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// AppName is the application name of the connection's handshake (client metadata). Only
// the connection's own goroutine may call it: that goroutine is the one writer
// (SetAppName), so it reads without the lock that $currentOp on other connections takes.
func (c *Conn) AppName() string { return c.appName }

// SetAppName records the application name of the connection's first handshake, under the
// lock $currentOp on other connections reads it with.
func (c *Conn) SetAppName(name string) {
	c.ops.mu.Lock()
	c.appName = name
	c.ops.mu.Unlock()
}

// Conn is one client connection's state: what its commands share (the reply buffer, the
// statistics of the last request for getLastRequestStatistics, the client's metadata).
type Conn struct {
	Info wire.ConnInfo
	Log  *zap.Logger
	Last RequestStats
	// Compressors are those both sides support, negotiated by hello.
	Compressors []string
	// SeenHello is set by the connection's first hello (or isMaster): the client metadata
	// may only come with that one (ClientMetadataCannotBeMutated).
	SeenHello bool
	// appName is the application name of the handshake's client metadata (for failCommand),
	// written under ops.mu, which $currentOp on other connections holds to read it.
	appName string
	// ops is the command running now, for $currentOp.
	ops opState
	// Authn is who the connection authenticated as.
	Authn access.Conn
	// openCursors counts the cursors this connection opened that are still open
	// (MaxCursorsPerConnection).
	openCursors atomic.Int32
	// Names are the last database name and namespace its requests named (names.go).
	Names nameCache
	// StreamCounter is the topologyVersion counter of the last reply of an exhaust hello
	// stream, which the next reply waits on (the server family's topology).
	StreamCounter int64
}

// RequestStats describes the last finished command of a connection.
type RequestStats struct {
	Command  string
	Duration time.Duration
	Charge   float64 // request units
}
