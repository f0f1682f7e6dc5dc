package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/failpoint"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// This file implements configureFailPoint (a test command, enabled by Options.TestCommands
// as mongod's enableTestCommands) and the one failpoint the drivers' spec tests use,
// failCommand, as mongod's CommandHelpers::evaluateFailCommandFailPoint does:
//
//	{configureFailPoint: "failCommand", mode: {times: 1},
//	 data: {failCommands: ["insert"], errorCode: 91, errorLabels: [...]}}
//	→ {count: <times entered so far>, ok: 1}; the next insert answers
//	{ok: 0, errmsg: "Failing command via 'failCommand' failpoint", code: 91, ...}

// requestNamespace is the namespace a command names: "db.coll" when its first field is a
// collection name, else the database.
func requestNamespace(r *command.Request) string {
	first, _ := bsonx.FirstElement(r.Body)
	if coll, ok := first.Value().StringValueOK(); ok && coll != "" {
		return r.DB + "." + coll
	}
	return r.DB
}

// failOp is r as the failCommand failpoint matches it, while r's command runs.
func (e *Executor) failOp(r *command.Request) *failpoint.Op {
	return &failpoint.Op{Name: r.Name, AppName: r.Conn.AppName(), Namespace: requestNamespace(r),
		// request-scoped: the failpoint matches the Op during the command and keeps none.
		Names: func(name string) bool { return e.Commands.Get(name) == r.Cmd }}
}

// evalFailCommand runs the failCommand failpoint before r's command: it may block, close
// the connection (failpoint.ErrCloseConnection) or fail the command with the configured
// error.
func (e *Executor) evalFailCommand(ctx context.Context, r *command.Request) (failpoint.Action, error) {
	if !e.Fail.Armed() {
		return failpoint.Action{}, nil
	}
	return e.Fail.Eval(ctx, e.failOp(r), r.Conn.Log)
}

// finishFailCommand completes a command the failpoint may have affected: it labels its
// error, or adds the configured writeConcernError to a write's reply (mongod evaluates the
// failpoint a second time for that, after the command ran).
func (e *Executor) finishFailCommand(r *command.Request, act failpoint.Action, err error) error {
	if err != nil {
		return labelError(r, act, err)
	}
	if !e.Fail.Armed() || !r.Cmd.Has(command.WriteConcern) {
		return nil
	}
	wce, act := e.Fail.WriteConcernError(e.failOp(r))
	if wce == nil {
		return nil
	}
	r.Out = bsoncore.AppendDocumentElement(r.Out, "writeConcernError", wce)
	labels := act.Labels
	if !act.HasLabels {
		code, _ := wce.Lookup("code").AsInt64OK()
		labels = errorLabels(r, 0, mongoerr.Code(code))
	}
	if len(labels) > 0 {
		r.Out = bsonx.AppendStringArray(r.Out, "errorLabels", labels)
	}
	return nil
}

// labelError gives a failed command's error the failpoint's errorLabels, or the label
// mongod adds itself (errorLabels).
func labelError(r *command.Request, act failpoint.Action, err error) error {
	me := mongoerr.As(err)
	if me == nil {
		return err
	}
	labels := act.Labels
	if !act.HasLabels {
		labels = errorLabels(r, me.Code, 0)
	}
	if len(labels) == 0 {
		return err
	}
	labeled := *me
	labeled.Labels = append([]string(nil), labels...)
	return &labeled
}

// retryableCodes are the codes of the retryable writes specification: network, "not
// primary" and shutdown errors.
var retryableCodes = map[mongoerr.Code]bool{
	mongoerr.HostUnreachable: true, mongoerr.HostNotFound: true, mongoerr.NetworkTimeout: true,
	mongoerr.ShutdownInProgress: true, mongoerr.PrimarySteppedDown: true, mongoerr.ExceededTimeLimit: true,
	mongoerr.SocketException: true, mongoerr.NotWritablePrimary: true, mongoerr.InterruptedAtShutdown: true,
	mongoerr.InterruptedDueToReplStateChange: true, mongoerr.NotPrimaryNoSecondaryOk: true,
	mongoerr.NotPrimaryOrSecondary: true,
}

// noteClientMetadata keeps the application name of a handshake's client metadata
// ({client: {application: {name}}}) for failCommand's appName; as in mongod, only the
// first handshake of a connection sets it.
func noteClientMetadata(r *command.Request) {
	switch r.Name {
	case "hello", "isMaster", "ismaster":
	default:
		return
	}
	if r.Conn.AppName() != "" {
		return
	}
	if name, ok := r.Body.Lookup("client", "application", "name").StringValueOK(); ok {
		r.Conn.SetAppName(name)
	}
}
