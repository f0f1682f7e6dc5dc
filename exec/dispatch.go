package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// dispatch finds the command named by the first field of the body and runs it.
func (e *Executor) dispatch(ctx context.Context, r *command.Request) (err error) {
	defer recoverPanic(r, &err)
	first, ok := bsonx.FirstElement(r.Body)
	if !ok {
		e.Counters.Count(command.OpCommand)
		return mongoerr.New(mongoerr.CommandNotFound, "no such command: ''")
	}
	cmd, name := e.Commands.Lookup(first.KeyBytes())
	if cmd == nil {
		name = first.Key()
	}
	r.Name, r.Cmd = name, cmd
	if r.Legacy && (cmd == nil || !cmd.Has(command.Legacy)) {
		e.Counters.Count(command.OpCommand)
		return mongoerr.New(mongoerr.UnsupportedOpQueryCommand, "Unsupported OP_QUERY command: %s. The client driver may require an upgrade. "+
			"For more details see https://dochub.mongodb.org/core/legacy-opcode-removal", r.Name)
	}
	db, ok := r.Conn.Names.DbName(r.Generic(command.GenDB))
	if !ok {
		e.Counters.Count(command.OpCommand)
		return mongoerr.New(mongoerr.Location40571, "OP_MSG requests require a $db argument")
	}
	r.DB = db
	if cmd == nil {
		e.Counters.Count(command.OpCommand)
		return mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", r.Name)
	}
	e.Counters.Count(cmd.Counter)
	if cmd.Has(command.Direct) {
		return e.runDirect(ctx, r, cmd)
	}
	noteClientMetadata(r)
	e.applyRWDefaults(r, cmd)
	e.Sessions.NoteLSID(r.Generic(command.GenLSID), e.SessionUser(r))
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
		e.appendConcernError(ctx, r)
	}
	return err
}

// runCommand checks where cmd may run and runs it.
func (e *Executor) runCommand(ctx context.Context, r *command.Request, cmd *command.Command) error {
	if cmd.AdminOnly && r.DB != "admin" {
		return mongoerr.New(mongoerr.Unauthorized, "%s may only be run against the admin database.", r.Name)
	}
	// $external is where external users (MONGODB-X509) authenticate: a database name for
	// the authentication commands only.
	if r.DB != "$external" || cmd.Action != auth.ActionNone {
		if err := catalog.ValidateDBName(r.DB); err != nil {
			return err
		}
	}
	if err := e.authorize(r, cmd); err != nil {
		return err
	}
	p, err := e.Priority(r) // exec/command/priority.go
	if err != nil {
		return err
	}
	ctx = catalog.WithPriority(ctx, p)
	if forwarded, err := e.forwardTxn(ctx, r); forwarded {
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
	if err := e.EnterLinearizableRead(ctx, r, cmd); err != nil {
		return err
	}
	if err := e.Clock.Gossip(r.Generic(command.GenClusterTime), r.Generic(command.GenReadConcern)); err != nil {
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
	if cmd.Has(command.OpensCursor) && !singleBatchFind(r) {
		r.Body = append(bsoncore.Document(nil), r.Body...)
	}
	if cmd.Has(command.RetryableWrite) {
		// A write passes the backup gate from before it writes until its operationTime is
		// ticked: a backup's cluster time then splits the writes exactly (exec/backup).
		e.Backup.Enter()
		defer func() {
			if r.OperationTime == 0 {
				r.OperationTime = e.Clock.Tick()
			}
			e.Backup.Leave()
		}()
	}
	e.FreshCatalog(ctx, r) // exec/command/catalog_fresh.go
	created := e.trackTxnDDL(r)
	err = e.withCatalogRev(r, e.runStaleRetrying(ctx, r, cmd)) // stale.go
	created()
	return afterTxnStatement(r, err)
}

// runDirect runs a Direct command (an internal request answered without the steps of a
// client's command): authorized, under the priority the router sent and the failCommand
// failpoint (tests hold it as any command), its StaleConfig naming this node's catalog
// revision.
func (e *Executor) runDirect(ctx context.Context, r *command.Request, cmd *command.Command) error {
	if err := e.authorize(r, cmd); err != nil {
		return err
	}
	p, err := e.Priority(r)
	if err != nil {
		return err
	}
	act, err := e.evalFailCommand(ctx, r)
	if err != nil {
		return labelError(r, act, err)
	}
	_ = e.Clock.Gossip(r.Generic(command.GenClusterTime), bsoncore.Value{}) // the router's time (route.Nodes.SetClock)
	err = e.withCatalogRev(r, cmd.Run(catalog.WithPriority(ctx, p), r))
	return e.finishFailCommand(r, act, err)
}

// singleBatchFind reports whether r is a find with singleBatch: true, whose cursor is
// closed before the command returns (firstBatch; a tailable one is refused), so nothing
// outlives the request: its body need not be copied (a point read's one copy, issue 13).
func singleBatchFind(r *command.Request) bool {
	if r.Name != "find" {
		return false
	}
	single, ok := r.Generic(command.GenSingleBatch).BooleanOK()
	return ok && single
}
