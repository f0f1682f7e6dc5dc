package command

import (
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/wire"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Request is one command being run: its body, where its reply is being built, and what it
// cost. Command functions append their reply fields to out (an open document); dispatch adds
// ok and closes it, or replaces everything with the error reply.
type Request struct {
	Conn      *Conn
	Body      bsoncore.Document
	Name      string // the command name as the client spelled it
	DB        string // $db
	RequestID int32
	Legacy    bool // arrived as OP_QUERY
	Out       []byte
	// Mem is the reply's share of the server's memory account (Server.Memory), held until
	// the reply is sent: a cursor's batch reserves its documents from it, and ends early
	// when the account is spent. nil: no account.
	Mem    *stream.Reservation
	Charge float64 // request units
	// Explain is the verbosity when this command runs inside explain, "" otherwise.
	Explain string
	// Wrote is set for commands that may write: their reply's operationTime is a new tick
	// of the cluster clock.
	Wrote bool
	// OperationTime, when set, is the reply's operationTime: the time a change stream's
	// aggregate started reading at, which a driver resumes from (startAtOperationTime) when
	// the stream returned no token yet.
	OperationTime uint64
	// Txn is the transaction the command runs in (exec/txn), nil outside one.
	Txn *txn.Txn
	// Snap is the snapshot of a snapshot read outside a transaction (txn.Snapshots).
	Snap *txn.SnapRead
	// Barrier, set for a read with readConcern "linearizable" (EnterLinearizableRead), is
	// what its read engine passes before it reads a shard of this node.
	Barrier query.Barrier
	// gen are the generic arguments of body (Generic).
	gen genericArgs
	// Wire is the request as it arrived, for a reply that streams (exhaust: hello); nil for
	// a command this server runs for itself.
	Wire *wire.Request
	// Awaited marks an awaitable hello, which waits by design: never logged as slow.
	Awaited bool
	// DefaultRC and DefaultWC record that the command runs under the cluster-wide default
	// read or write concern (setDefaultRWConcern), put into Body by the command path: its
	// log line says so (provenance "customDefault").
	DefaultRC, DefaultWC bool
	// Cmd is the command's entry in the table; nil for a command not found.
	Cmd *Command
	// Plan is the plan of the command's read (find, count, distinct, aggregate), nil if
	// none: a slow operation shows its summary (query.Plan.Summary), computed only then.
	Plan *query.Plan
	// Done, when set, is memory of the command that nothing uses once its reply is built
	// and the command is logged (a finished find's findRun): the connection releases it
	// then, for the next request to reuse. A caller that never releases it leaves it to
	// the garbage collector.
	Done Releaser
}

// Releaser is memory a finished request hands back (Request.Done).
type Releaser interface {
	Release()
}

// genericArgs are the fields of a command body that the command path reads for every
// command, found in one pass over the body: eight lookups, each a walk of the whole body
// when the field is absent (the common case), were a tenth of a point read's CPU (issue 13).
// Each is the first field of its name, as body.Lookup finds it, kept as its offset in the
// body (0: absent), which a copy of the body shares.
type genericArgs struct {
	scanned bool
	// api: one of apiVersion, apiStrict or apiDeprecationErrors is present (the root's api_version.go).
	api bool
	off [numGeneric]int32
}

// The fields genericArgs keeps.
const (
	GenDB = iota
	GenLSID
	GenClusterTime
	GenReadConcern
	GenTxnNumber
	GenAutocommit
	GenStartTxn
	GenSingleBatch // find's singleBatch (singleBatchFind)
	GenPriority    // priorityLevel, cleave's (priority.go)
	numGeneric
)

// Generic returns field f (GenDB…) of r's body, Type 0 when absent. The body is read once,
// at the first call.
func (r *Request) Generic(f int) bsoncore.Value {
	g := &r.gen
	if !g.scanned {
		g.scan(r.Body)
	}
	if g.off[f] == 0 {
		return bsoncore.Value{}
	}
	el, _, _ := bsoncore.ReadElement(r.Body[g.off[f]:])
	return el.Value()
}

// SetBody replaces r's body with b (the command path adds a default concern to it); the
// generic arguments are read again from b.
func (r *Request) SetBody(b bsoncore.Document) {
	r.Body = b
	r.gen = genericArgs{}
}

// HasAPIParams reports whether r's body has one of the Stable API fields.
func (r *Request) HasAPIParams() bool {
	if !r.gen.scanned {
		r.gen.scan(r.Body)
	}
	return r.gen.api
}

// scan records the generic fields of body.
func (g *genericArgs) scan(body bsoncore.Document) {
	g.scanned = true
	if len(body) < 5 {
		return
	}
	pos := 4
	for rest := body[4 : len(body)-1]; len(rest) > 0; {
		el, next, ok := bsoncore.ReadElement(rest)
		if !ok {
			return
		}
		f := -1
		switch string(el.KeyBytes()) {
		case "$db":
			f = GenDB
		case "lsid":
			f = GenLSID
		case "$clusterTime":
			f = GenClusterTime
		case "readConcern":
			f = GenReadConcern
		case "txnNumber":
			f = GenTxnNumber
		case "autocommit":
			f = GenAutocommit
		case "startTransaction":
			f = GenStartTxn
		case "singleBatch":
			f = GenSingleBatch
		case "priorityLevel":
			f = GenPriority
		case "apiVersion", "apiStrict", "apiDeprecationErrors":
			g.api = true
		}
		if f >= 0 && g.off[f] == 0 {
			g.off[f] = int32(pos)
		}
		pos += len(el)
		rest = next
	}
}
