package command

import (
	"github.com/cleavedb/cleave/exec/session"
)

// Session expiry. A session unused for localLogicalSessionTimeoutMinutes (30, or
// Options.SessionTimeout) expires, as in MongoDB: the reaper aborts its open transaction,
// closes its cursors and removes its retryable-write records from every shard (MongoDB
// reaps config.transactions entries with the session), so that the store does not keep a
// record per session ever used. Records whose session is not cached (written before a
// restart, or by a session that ended) expire by their lastWriteDate the same way. A
// session checked out by a command is never reaped under it; one used again while the
// reaper deletes its records stays, with its state reloaded from the store.

// SessionUser returns the user r runs as for its sessions: its connection's with
// authentication on, none otherwise.
func (e *Server) SessionUser(r *Request) session.Owner {
	if !e.Access.Enabled() || r.Conn == nil || len(r.Conn.Authn.Users) == 0 {
		return session.Owner{}
	}
	return session.Owner{User: r.Conn.Authn.Users[0], Set: true}
}
