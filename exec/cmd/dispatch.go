package cmd

import (
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// request is one command being run: its body, where its reply is being built, and what it
// cost. Command functions append their reply fields to out (an open document); dispatch adds
// ok and closes it, or replaces everything with the error reply.
type request struct {
	conn      *conn
	body      bsoncore.Document
	name      string // the command name as the client spelled it
	db        string // $db
	requestID int32
	legacy    bool // arrived as OP_QUERY
	out       []byte
	charge    float64 // request units
	// explain is the verbosity when this command runs inside explain, "" otherwise.
	explain string
	// wrote is set for commands that may write: their reply's operationTime is a new tick
	// of the cluster clock.
	wrote bool
	// txn is the transaction the command runs in (txn.go), nil outside one.
	txn *txnState
	// snap is the snapshot of a snapshot read outside a transaction (snapshot_read.go).
	snap *snapEntry
	// gen are the generic arguments of body (generic_args.go).
	gen genericArgs
	// wire is the request as it arrived, for a reply that streams (exhaust: hello); nil for
	// a command this server runs for itself.
	wire *wire.Request
	// awaited marks an awaitable hello, which waits by design: never logged as slow.
	awaited bool
}

// command is one entry of the command table.
type command struct {
	run       func(ctx context.Context, r *request) error
	help      string
	adminOnly bool // must run against the admin database
	// counter is the serverStatus.opcounters field this command counts towards.
	counter func(*opCounters)
	// retainsBody marks commands whose results outlive the request (cursors keep compiled
	// filters that alias the body): dispatch gives them a private copy of the body, which
	// otherwise aliases the connection's reused read buffer.
	retainsBody bool
	// action is the privilege the command needs on its database (or the cluster) when access
	// control is on; every command declares one (auth.ActionNone for the handshake).
	action auth.Action
	// needs, when set, replaces the one need {action, db, collection} with what this
	// invocation needs (aggregate with $out on another database, renameCollection, ...).
	needs func(r *request, def auth.Need) []auth.Need
}

// dispatch finds the command named by the first field of the body and runs it.
func (e *Executor) dispatch(ctx context.Context, r *request) (err error) {
	defer r.conn.recoverPanic(r, &err)
	first, ok := bsonx.FirstElement(r.body)
	if !ok {
		e.counters.command.Add(1)
		return mongoerr.New(mongoerr.CommandNotFound, "no such command: ''")
	}
	name, known := e.cmdNames[string(first.KeyBytes())]
	if !known {
		name = first.Key()
	}
	r.name = name
	if r.legacy && !opQueryCommands[r.name] {
		e.counters.command.Add(1)
		return mongoerr.New(mongoerr.UnsupportedOpQueryCommand, "Unsupported OP_QUERY command: %s. The client driver may require an upgrade. "+
			"For more details see https://dochub.mongodb.org/core/legacy-opcode-removal", r.name)
	}
	db, ok := r.conn.names.dbName(r.generic(genDB))
	if !ok {
		e.counters.command.Add(1)
		return mongoerr.New(mongoerr.Location40571, "OP_MSG requests require a $db argument")
	}
	r.db = db
	cmd := e.commands[r.name]
	if cmd == nil {
		e.counters.command.Add(1)
		return mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", r.name)
	}
	if cmd.counter != nil {
		cmd.counter(&e.counters)
	} else {
		e.counters.command.Add(1)
	}
	noteClientMetadata(r)
	e.sessions.noteLSID(r.generic(genLSID), e.sessionUser(r))
	if err := checkAPIParameters(ctx, r); err != nil {
		return err
	}
	// As in mongod, the failpoint comes after the command lookup and before the checks of
	// the database name.
	act, err := e.evalFailCommand(ctx, r, cmd)
	if err != nil {
		return labelError(r, act, err)
	}
	err = e.runCommand(ctx, r, cmd)
	if err = e.finishFailCommand(r, cmd, act, err); err == nil {
		appendConcernError(r)
	}
	return err
}

// runCommand checks where cmd may run and runs it.
func (e *Executor) runCommand(ctx context.Context, r *request, cmd *command) error {
	if cmd.adminOnly && r.db != "admin" {
		return mongoerr.New(mongoerr.Unauthorized, "%s may only be run against the admin database.", r.name)
	}
	// $external is where external users (MONGODB-X509) authenticate: a database name for
	// the authentication commands only.
	if r.db != "$external" || cmd.action != auth.ActionNone {
		if err := validateDBName(r.db); err != nil {
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
		r.txn.abort()
		return err
	}
	if err := e.clock.Gossip(r.generic(genClusterTime), r.generic(genReadConcern)); err != nil {
		return err
	}
	releaseSnap, err := e.enterSnapshotRead(r)
	if err != nil {
		return err
	}
	defer releaseSnap()
	switch cmd.action {
	case auth.ActionWrite, auth.ActionDDL, auth.ActionDBAdmin:
		r.wrote = true
	}
	if cmd.retainsBody || retainsBody[r.name] && !singleBatchFind(r) {
		r.body = append(bsoncore.Document(nil), r.body...)
	}
	created := e.trackTxnDDL(r)
	err = e.withCatalogRev(r, e.runStaleRetrying(ctx, r, cmd)) // remote_stale.go
	created()
	return afterTxnStatement(r, err)
}

// retainsBody names the commands that open cursors, whose compiled filters, projections and
// pipelines alias the request body (see command.retainsBody).
var retainsBody = map[string]bool{"find": true, "aggregate": true, "listCollections": true, "listIndexes": true}

// singleBatchFind reports whether r is a find with singleBatch: true, whose cursor is
// closed before the command returns (firstBatch; a tailable one is refused), so nothing
// outlives the request: its body need not be copied (a point read's one copy, issue 13).
func singleBatchFind(r *request) bool {
	if r.name != "find" {
		return false
	}
	single, ok := r.generic(genSingleBatch).BooleanOK()
	return ok && single
}

// validateDBName applies MongoDB's rules for database names.
func validateDBName(db string) error {
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

// commandTable returns every command cleave answers, by name. Aliases share an entry.
func (e *Executor) commandTable() map[string]*command {
	t := map[string]*command{}
	add := func(c *command, names ...string) {
		for _, n := range names {
			t[n] = c
		}
	}
	e.addServerCommands(add)
	e.addTransactionCommands(add)
	if e.opts.Storage != nil {
		e.addDataCommands(add)
		e.addSearchIndexCommands(add)
		e.addAuthCommands(add)
	}
	if e.opts.TestCommands {
		e.addTestCommands(add)
	}
	return t
}

// commandNames returns the names of all commands, sorted, for listCommands.
func (e *Executor) commandNames() []string {
	names := make([]string, 0, len(e.commands))
	for n := range e.commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// opQueryCommands are the commands MongoDB 7.0 still runs when they arrive as OP_QUERY: the
// handshake, and the few that old drivers send before they switch to OP_MSG
// (checkAllowedOpQueryCommand); any other answers UnsupportedOpQueryCommand.
var opQueryCommands = map[string]bool{
	"hello": true, "isMaster": true, "ismaster": true,
	"_isSelf": true, "authenticate": true, "buildinfo": true, "buildInfo": true,
	"saslContinue": true, "saslStart": true,
}
