// Package session is the logical session cache of the server, as a mongos keeps one: the
// sessions (lsid) commands arrive with, the user each belongs to and when each was last used;
// the checkout of a session by a retryable write or a transaction's statement (a retry waits
// for the first attempt); the statement's transaction (EnterTxn); the expiry of unused
// sessions, which aborts their transactions, closes their cursors and removes their
// retryable-write records (Reap); and the kill patterns of killSessions and
// killAllSessionsByPattern, as MongoDB's SessionKiller matches them.
package session
