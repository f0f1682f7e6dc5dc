package command

import (
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
	Charge    float64 // request units
	// Explain is the verbosity when this command runs inside explain, "" otherwise.
	Explain string
	// Wrote is set for commands that may write: their reply's operationTime is a new tick
	// of the cluster clock.
	Wrote bool
	// Txn is the transaction the command runs in (txn.go), nil outside one.
	Txn *txn.Txn
	// Snap is the snapshot of a snapshot read outside a transaction (snapshot_read.go).
	Snap *txn.SnapRead
	// gen are the generic arguments of body (generic_args.go).
	gen genericArgs
	// Wire is the request as it arrived, for a reply that streams (exhaust: hello); nil for
	// a command this server runs for itself.
	Wire *wire.Request
	// Awaited marks an awaitable hello, which waits by design: never logged as slow.
	Awaited bool
	// Cmd is the command's entry in the table; nil for a command not found.
	Cmd *Command
}
