package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Multi-document transactions are not implemented yet (TODO(#15): snapshot reads, buffered
// writes, one atomic commit per shard). Until they are, every command that would start or
// continue one is refused, so that no write of an intended transaction is applied at once
// (which an abort could not undo).

// errNoTransactions is the answer to startTransaction, autocommit: false and the commands
// that end a transaction.
func errNoTransactions() *mongoerr.Error {
	return mongoerr.New(mongoerr.IllegalOperation,
		"Multi-document transactions are not supported yet by this server (startTransaction, autocommit: false, "+
			"commitTransaction and abortTransaction are refused so that no write of a transaction is applied outside it)")
}

// checkNoTransaction refuses a command that starts or continues a transaction: one whose
// body carries startTransaction or autocommit.
func checkNoTransaction(body bsoncore.Document) error {
	if _, err := body.LookupErr("startTransaction"); err == nil {
		return errNoTransactions()
	}
	if _, err := body.LookupErr("autocommit"); err == nil {
		return errNoTransactions()
	}
	return nil
}

// addTransactionCommands registers commitTransaction and abortTransaction, which answer
// that transactions are not supported (rather than CommandNotFound, which drivers do not
// expect from a mongos).
func (e *Executor) addTransactionCommands(add func(*command, ...string)) {
	refuse := func(context.Context, *request) error { return errNoTransactions() }
	add(&command{run: refuse, action: auth.ActionAuthenticated, adminOnly: true, help: "commit a transaction"}, "commitTransaction")
	add(&command{run: refuse, action: auth.ActionAuthenticated, adminOnly: true, help: "abort a transaction"}, "abortTransaction")
}
