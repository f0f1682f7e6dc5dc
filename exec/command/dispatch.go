package command

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
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
	// explain is the verbosity when this command runs inside explain, "" otherwise.
	Explain string
	// wrote is set for commands that may write: their reply's operationTime is a new tick
	// of the cluster clock.
	Wrote bool
	// txn is the transaction the command runs in (txn.go), nil outside one.
	Txn *txn.Txn
	// snap is the snapshot of a snapshot read outside a transaction (snapshot_read.go).
	Snap *txn.SnapRead
	// gen are the generic arguments of body (generic_args.go).
	gen genericArgs
	// wire is the request as it arrived, for a reply that streams (exhaust: hello); nil for
	// a command this server runs for itself.
	Wire *wire.Request
	// Awaited marks an awaitable hello, which waits by design: never logged as slow.
	Awaited bool
	// Cmd is the command's entry in the table; nil for a command not found.
	Cmd *Command
}

// dispatch finds the command named by the first field of the body and runs it.
func (e *Server) dispatch(ctx context.Context, r *Request) (err error) {
	defer r.Conn.recoverPanic(r, &err)
	first, ok := bsonx.FirstElement(r.Body)
	if !ok {
		e.Counters.Count(OpCommand)
		return mongoerr.New(mongoerr.CommandNotFound, "no such command: ''")
	}
	cmd, name := e.Commands.Lookup(first.KeyBytes())
	if cmd == nil {
		name = first.Key()
	}
	r.Name, r.Cmd = name, cmd
	if r.Legacy && (cmd == nil || !cmd.Has(Legacy)) {
		e.Counters.Count(OpCommand)
		return mongoerr.New(mongoerr.UnsupportedOpQueryCommand, "Unsupported OP_QUERY command: %s. The client driver may require an upgrade. "+
			"For more details see https://dochub.mongodb.org/core/legacy-opcode-removal", r.Name)
	}
	db, ok := r.Conn.Names.dbName(r.Generic(GenDB))
	if !ok {
		e.Counters.Count(OpCommand)
		return mongoerr.New(mongoerr.Location40571, "OP_MSG requests require a $db argument")
	}
	r.DB = db
	if cmd == nil {
		e.Counters.Count(OpCommand)
		return mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", r.Name)
	}
	e.Counters.Count(cmd.Counter)
	noteClientMetadata(r)
	e.Sessions.NoteLSID(r.Generic(GenLSID), e.SessionUser(r))
	if err := checkAPIParameters(ctx, r); err != nil {
		return err
	}
	// As in mongod, the failpoint comes after the command lookup and before the checks of
	// the database name.
	act, err := e.evalFailCommand(ctx, r)
	if err != nil {
		return labelError(r, act, err)
	}
	err = e.runCommand(ctx, r, cmd)
	if err = e.finishFailCommand(r, act, err); err == nil {
		appendConcernError(r)
	}
	return err
}

// runCommand checks where cmd may run and runs it.
func (e *Server) runCommand(ctx context.Context, r *Request, cmd *Command) error {
	if cmd.AdminOnly && r.DB != "admin" {
		return mongoerr.New(mongoerr.Unauthorized, "%s may only be run against the admin database.", r.Name)
	}
	// $external is where external users (MONGODB-X509) authenticate: a database name for
	// the authentication commands only.
	if r.DB != "$external" || cmd.Action != auth.ActionNone {
		if err := ValidateDBName(r.DB); err != nil {
			return err
		}
	}
	if err := e.authorize(r, cmd); err != nil {
		return err
	}
	release, err := e.enterTxn(r)
	if err != nil {
		return err
	}
	defer release()
	if err := e.checkTxnCommand(r); err != nil {
		r.Txn.Abort()
		return err
	}
	if err := e.Clock.Gossip(r.Generic(GenClusterTime), r.Generic(GenReadConcern)); err != nil {
		return err
	}
	releaseSnap, err := e.enterSnapshotRead(r)
	if err != nil {
		return err
	}
	defer releaseSnap()
	switch cmd.Action {
	case auth.ActionWrite, auth.ActionDDL, auth.ActionDBAdmin:
		r.Wrote = true
	}
	if cmd.Has(OpensCursor) && !singleBatchFind(r) {
		r.Body = append(bsoncore.Document(nil), r.Body...)
	}
	created := e.trackTxnDDL(r)
	err = e.withCatalogRev(r, e.runStaleRetrying(ctx, r, cmd)) // remote_stale.go
	created()
	return afterTxnStatement(r, err)
}

// singleBatchFind reports whether r is a find with singleBatch: true, whose cursor is
// closed before the command returns (firstBatch; a tailable one is refused), so nothing
// outlives the request: its body need not be copied (a point read's one copy, issue 13).
func singleBatchFind(r *Request) bool {
	if r.Name != "find" {
		return false
	}
	single, ok := r.Generic(GenSingleBatch).BooleanOK()
	return ok && single
}

// validateDBName applies MongoDB's rules for database names.
func ValidateDBName(db string) error {
	if db == "" {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid empty database name")
	}
	if len(db) >= 64 {
		return mongoerr.New(mongoerr.InvalidNamespace, "db name '%s' is too long, max length is 63", db)
	}
	for i := 0; i < len(db); i++ {
		switch db[i] {
		case '/', '\\', '.', ' ', '"', '$', 0:
			return mongoerr.New(mongoerr.InvalidNamespace, "Invalid database name: '%s'", db)
		}
	}
	return nil
}

// commandTable returns every command cleave answers.
func (e *Server) commandTable(families []Family) *Table {
	t := NewTable()
	add := t.Add
	if e.Opts.Storage != nil {
	}
	for _, f := range families {
		f(e, add)
	}
	return t
}

// Family registers a family of commands, whose handlers live in a package of their own
// above this one (exec/command/users, ...), on s.
type Family func(s *Server, add func(*Command))
