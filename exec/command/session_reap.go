package command

import (
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// Session expiry. A session unused for localLogicalSessionTimeoutMinutes (30, or
// Options.SessionTimeout) expires, as in MongoDB: the reaper aborts its open transaction,
// closes its cursors and removes its retryable-write records from every shard (MongoDB
// reaps config.transactions entries with the session), so that the store does not keep a
// record per session ever used. Records whose session is not cached (written before a
// restart, or by a session that ended) expire by their lastWriteDate the same way. A
// session checked out by a command is never reaped under it; one used again while the
// reaper deletes its records stays, with its state reloaded from the store.

// userDigest is lsid.uid for user u.
func userDigest(u auth.UserName) [32]byte { return sessionOwner{user: u, set: true}.uid() }

// sessionUser returns the user r runs as for its sessions: its connection's with
// authentication on, none otherwise.
func (e *Server) sessionUser(r *Request) sessionOwner {
	if !e.Access.Enabled() || r.Conn == nil || len(r.Conn.Authn.Users) == 0 {
		return sessionOwner{}
	}
	return sessionOwner{user: r.Conn.Authn.Users[0], set: true}
}

// reapInterval is how often the session reaper runs for timeout: a quarter of it, between
// 10 ms and a minute.
func reapInterval(timeout time.Duration) time.Duration {
	return min(max(timeout/4, 10*time.Millisecond), time.Minute)
}

// runSessionReaper reaps expired sessions, and aborts the transactions past
// transactionLifetimeLimitSeconds (every second at most), until the executor closes.
func (e *Server) runSessionReaper() {
	every := reapInterval(e.Sessions.timeout)
	t := time.NewTicker(min(every, time.Second))
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			e.Txns.AbortExpired(now)
			if now.Sub(last) >= every {
				e.ReapSessions(now)
				last = now
			}
		}
	}
}

// ReapSessions ends the sessions expired at now: their transactions, cursors and
// retryable-write records.
func (e *Server) ReapSessions(now time.Time) {
	c := &e.Sessions
	if e.Cat != nil {
		e.adoptExpiredRecords(now)
	}
	deadline := now.UnixNano() - int64(c.timeout)
	var ids [][16]byte
	var held []*session
	c.mu.RLock()
	for id, s := range c.m {
		if s.lastUse.Load() < deadline && s.mu.TryLock() { // a checked-out session is in use
			ids, held = append(ids, id), append(held, s)
		}
	}
	c.mu.RUnlock()
	if len(ids) == 0 {
		return
	}
	for _, s := range held {
		s.txn.Load().Abort()
		s.retry = nil // reloaded from the store if the session is used again
	}
	if err := e.deleteTxnRecords(ids); err != nil {
		e.Log.Warn("cannot remove the records of expired sessions", zap.Int("sessions", len(ids)), zap.Error(err))
		for _, s := range held {
			s.mu.Unlock()
		}
		return
	}
	var reaped [][16]byte
	c.mu.Lock()
	for i, id := range ids {
		s := held[i]
		if s.lastUse.Load() < deadline && c.m[id] == s { // not used again meanwhile
			delete(c.m, id)
			s.reaped = true
			reaped = append(reaped, id)
		}
	}
	c.mu.Unlock()
	for _, s := range held {
		s.mu.Unlock()
	}
	gone := make(map[[16]byte]bool, len(reaped))
	for _, id := range reaped {
		gone[id] = true
	}
	e.Cursors.RemoveSessions(func(lsid [16]byte) bool { return gone[lsid] })
	e.Log.Debug("expired sessions reaped", zap.Int("sessions", len(reaped)))
}

// adoptExpiredRecords puts in the cache, as last used at their lastWriteDate, the sessions
// that are not cached but have a record older than the timeout, so that reapSessions
// removes them under their session's lock like any other. A record without a date counts
// as written at startup.
func (e *Server) adoptExpiredRecords(now time.Time) {
	c := &e.Sessions
	cutoff := now.Add(-c.timeout)
	adopt := map[[16]byte]time.Time{}
	for _, sh := range e.Cat.Shards() {
		err := sh.TxnRecords(func(lsid, rec []byte) error {
			if len(lsid) != 16 {
				return nil
			}
			id := [16]byte(lsid)
			c.mu.RLock()
			_, cached := c.m[id]
			c.mu.RUnlock()
			if cached {
				return nil
			}
			t, ok := write.RecordLastWrite(rec)
			if !ok {
				t = e.Started
			}
			if t.Before(cutoff) {
				if prev, seen := adopt[id]; !seen || t.After(prev) {
					adopt[id] = t
				}
			}
			return nil
		})
		if err != nil {
			e.Log.Warn("cannot read the sessions' records", zap.Error(err))
			return
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[16]byte]*session{}
	}
	for id, t := range adopt {
		if _, ok := c.m[id]; !ok {
			s := &session{uid: args.EmptyUserDigest}
			s.lastUse.Store(t.UnixNano())
			c.m[id] = s
		}
	}
}

// deleteTxnRecords removes the retryable-write records of sessions ids from every shard.
func (e *Server) deleteTxnRecords(ids [][16]byte) error {
	if e.Cat == nil {
		return nil
	}
	var buf []byte
	for _, sh := range e.Cat.Shards() {
		var lsids [][]byte // those with a record: most sessions never write one
		for i := range ids {
			var err error
			if buf, err = sh.GetTxnRecord(ids[i][:], buf[:0]); err == nil {
				lsids = append(lsids, ids[i][:])
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if len(lsids) == 0 {
			continue
		}
		if err := sh.DeleteTxnRecords(lsids); err != nil {
			return err
		}
	}
	return nil
}

// sessionTimeoutMinutes is logicalSessionTimeoutMinutes as hello and startSession report
// it: the timeout in whole minutes, rounded up (a test's seconds report 1).
func (e *Server) SessionTimeoutMinutes() int32 {
	return int32((e.Sessions.timeout + time.Minute - 1) / time.Minute)
}
