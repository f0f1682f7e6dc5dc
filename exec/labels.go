package exec

import (
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// errorLabels is mongod's ErrorLabelBuilder: the labels of a command that failed with code
// (0: it succeeded) or answered a writeConcernError with wcCode (0: none).
// TransientTransactionError marks a failure of a transaction's statement that leaves nothing
// behind (the driver retries the whole transaction); RetryableWriteError marks a retryable
// write, or a transaction's commit or abort, that failed with a retryable code (the driver
// retries the command). Only one of them is given.
func errorLabels(r *command.Request, code, wcCode mongoerr.Code) []string {
	if _, err := r.Body.LookupErr("txnNumber"); err != nil {
		return nil
	}
	_, err := r.Body.LookupErr("autocommit")
	inTxn := err == nil
	commitOrAbort := r.Name == "commitTransaction" || r.Name == "abortTransaction"
	if inTxn && code != 0 && transientTxnError(code, wcCode != 0, commitOrAbort) {
		return []string{"TransientTransactionError"}
	}
	retryableWrite := !inTxn && r.Cmd.Has(command.RetryableWrite)
	if (retryableWrite || inTxn && commitOrAbort) && (retryableCodes[code] || retryableCodes[wcCode]) {
		return []string{"RetryableWriteError"}
	}
	return nil
}

// transientTxnError is mongo::isTransientTransactionError: whether a transaction whose
// statement failed with code can be retried from its start.
func transientTxnError(code mongoerr.Code, hasWCE, commitOrAbort bool) bool {
	switch code {
	case mongoerr.WriteConflict, mongoerr.LockTimeout, mongoerr.PreparedTransactionInProgress,
		mongoerr.ShardInvalidatedForTargeting, mongoerr.StaleDbVersion,
		mongoerr.SnapshotTooOld, mongoerr.SnapshotUnavailable, // snapshot errors
		mongoerr.StaleShardVersion, mongoerr.StaleEpoch, mongoerr.StaleConfig: // need retargeting
		return true
	}
	if commitOrAbort {
		// A commit that failed with NoSuchTransaction may be retried whole only when no
		// write concern error says the data might be rolled back.
		return code == mongoerr.NoSuchTransaction && !hasWCE
	}
	return retryableCodes[code] || code == mongoerr.NoSuchTransaction
}
