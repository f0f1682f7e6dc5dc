package session

import (
	"errors"
	"time"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
	"go.uber.org/zap"
)

// UserDigest is lsid.uid for user u.
func UserDigest(u auth.UserName) [32]byte { return Owner{User: u, Set: true}.UID() }

// reapInterval is how often the session reaper runs for timeout: a quarter of it, between
// 10 ms and a minute.
func reapInterval(timeout time.Duration) time.Duration {
	return min(max(timeout/4, 10*time.Millisecond), time.Minute)
}

// Run reaps expired sessions, and aborts the transactions past
// transactionLifetimeLimitSeconds (every second at most), until stop closes.
func (c *Cache) Run(stop <-chan struct{}) {
	every := reapInterval(c.timeout)
	t := time.NewTicker(min(every, time.Second))
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			c.opts.Txns.AbortExpired(now)
			if now.Sub(last) >= every {
				c.Reap(now)
				last = now
			}
		}
	}
}

// Reap ends the sessions expired at now: their transactions, cursors and retryable-write
// records.
func (c *Cache) Reap(now time.Time) {
	if c.opts.Cat != nil {
		c.adoptExpiredRecords(now)
	}
	deadline := now.UnixNano() - int64(c.timeout)
	var ids [][16]byte
	var held []*Session
	c.mu.RLock()
	for id, s := range c.m {
		if s.lastUse.Load() < deadline && s.mu.TryLock() { // a checked-out Session is in use
			ids, held = append(ids, id), append(held, s)
		}
	}
	c.mu.RUnlock()
	if len(ids) == 0 {
		return
	}
	for _, s := range held {
		s.txn.Load().Abort()
		s.retry = nil // reloaded from the store if the Session is used again
	}
	if err := c.deleteTxnRecords(ids); err != nil {
		c.opts.Log.Warn("cannot remove the records of expired sessions", zap.Int("sessions", len(ids)), zap.Error(err))
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
	c.opts.Cursors.RemoveSessions(func(lsid [16]byte) bool { return gone[lsid] })
	c.opts.Log.Debug("expired sessions reaped", zap.Int("sessions", len(reaped)))
}

// adoptExpiredRecords puts in the cache, as last used at their lastWriteDate, the sessions
// that are not cached but have a record older than the timeout, so that reapSessions
// removes them under their session's lock like any other. A record without a date counts
// as written at startup.
func (c *Cache) adoptExpiredRecords(now time.Time) {
	cutoff := now.Add(-c.timeout)
	adopt := map[[16]byte]time.Time{}
	for _, sh := range c.opts.Cat.Shards() {
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
				t = c.opts.Started
			}
			if t.Before(cutoff) {
				if prev, seen := adopt[id]; !seen || t.After(prev) {
					adopt[id] = t
				}
			}
			return nil
		})
		if err != nil {
			c.opts.Log.Warn("cannot read the sessions' records", zap.Error(err))
			return
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[16]byte]*Session{}
	}
	for id, t := range adopt {
		if _, ok := c.m[id]; !ok {
			s := &Session{uid: args.EmptyUserDigest}
			s.lastUse.Store(t.UnixNano())
			c.m[id] = s
		}
	}
}

// deleteTxnRecords removes the retryable-write records of sessions ids from every shard.
func (c *Cache) deleteTxnRecords(ids [][16]byte) error {
	if c.opts.Cat == nil {
		return nil
	}
	var buf []byte
	for _, sh := range c.opts.Cat.Shards() {
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

// TimeoutMinutes is logicalSessionTimeoutMinutes as hello and startSession report it: the
// timeout in whole minutes, rounded up (a test's seconds report 1).
func (c *Cache) TimeoutMinutes() int32 {
	return int32((c.timeout + time.Minute - 1) / time.Minute)
}
