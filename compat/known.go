package compat

// knownFailures explains, by suite and test name, failures that are not bugs cleave can fix
// as it stands: the report shows the explanation instead of the runner's message (which
// follows it), so that every remaining failure of the suites says why.
var knownFailures = map[string]string{
	"transactions-legacy/mongos-recovery-token.json/commitTransaction_retry_fails_on_new_mongos": "needs two routers: " +
		"cleave is one router named twice in the URI, so the retry reaches the router that still holds the transaction " +
		"and commits it instead of failing with NoSuchTransaction",
	"transactions-legacy/pin-mongos.json/unpin_after_transient_error_within_a_transaction_and_commit": "needs two " +
		"routers: the failpoint that closes connections on the first mongos also closes the handshake of the second, " +
		"which is the same cleave",
}

// explainReason returns the explanation of a known failure of suite, or reason.
func explainReason(suite string, r Result) string {
	if r.Status != Fail && r.Status != NotRun {
		return r.Reason
	}
	if k, ok := knownFailures[suite+"/"+r.Name]; ok {
		return k + " (" + r.Reason + ")"
	}
	return r.Reason
}
