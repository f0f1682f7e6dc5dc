package session

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/write"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
)

// Cache is the logical session cache of this process, as mongos keeps one: the
// sessions (lsid) commands arrived with, the user each belongs to, when each was last used,
// and the retryable-write state of each (CheckoutRetryable). $listLocalSessions reads it;
// endSessions and killSessions remove from it. A session unused for its timeout expires
// (Reap): its transaction is aborted, its cursors closed and its retryable-write
// records removed from the store.
type Cache struct {
	mu sync.RWMutex
	m  map[[16]byte]*Session // lsid UUID → session
	// timeout is localLogicalSessionTimeoutMinutes (Options.Timeout).
	timeout time.Duration
	opts    Options
	// epoch changes when the shards this node serves change (InvalidateRetries): a
	// session's retryable-write state loaded before may miss what another node recorded.
	epoch atomic.Uint64
}

// InvalidateRetries makes every session read its retryable-write state from the shards'
// records again at its next retryable write: this node now serves shards whose records
// another node wrote (a replicated shard's new leader).
func (c *Cache) InvalidateRetries() { c.epoch.Add(1) }

// Options are what a session cache works with.
type Options struct {
	// Timeout is localLogicalSessionTimeoutMinutes: a session unused that long expires.
	Timeout time.Duration
	// Cursors and Txns are what an expired or killed session closes and aborts.
	Cursors *cursor.Registry
	Txns    *txn.Registry
	// Cat holds the shards whose retryable-write records the reaper removes (nil: no
	// storage, no records).
	Cat *catalog.Catalog
	// Started is when the server started: a record without a date was written before.
	Started time.Time
	Log     *zap.Logger
}

// DefaultTimeout is localLogicalSessionTimeoutMinutes' default, 30 minutes.
const DefaultTimeout = 30 * time.Minute

// New returns an empty session cache.
func New(opts Options) *Cache {
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Cache{timeout: opts.Timeout, opts: opts, m: map[[16]byte]*Session{}}
}

// Session is one logical session's server-side state.
type Session struct {
	lastUse atomic.Int64 // Unix nanoseconds
	// uid is the digest of the user whose command created the session (lsid.uid:
	// args.EmptyUserDigest without authentication).
	uid [32]byte
	// mu is held by the command that has the session checked out (a retryable write or a
	// transaction's statement, checkout), so that a retry waits for the first attempt to
	// finish; it guards retry and reaped.
	mu sync.Mutex
	// retry is the retryable-write state, nil until a write with txnNumber loads it.
	retry *write.Retry
	// retryEpoch is the cache's epoch when retry was loaded.
	retryEpoch uint64
	// reaped reports that the session expired and left the cache: checkout then takes the
	// one that replaced it.
	reaped bool
	// txn is the session's latest multi-document transaction (exec/txn), nil before one.
	txn atomic.Pointer[txn.Txn]
}

// sessionRefresh is how old a lastUse may get before a command refreshes it, so that the hot
// path mostly only takes the read lock.
const sessionRefresh = time.Second

// DefaultSessionTimeout is localLogicalSessionTimeoutMinutes' default, 30 minutes.
const DefaultSessionTimeout = 30 * time.Minute

// Owner is the user a command runs as, whose digest is the uid of the sessions it
// creates (computed only then); the zero value is no user.
type Owner struct {
	User auth.UserName
	Set  bool
}

// UID returns lsid.uid for the owner: SHA-256 of "user@db", as MongoDB computes it, or the
// empty user's digest.
func (o Owner) UID() [32]byte {
	if !o.Set {
		return args.EmptyUserDigest
	}
	return sha256.Sum256([]byte(o.User.User + "@" + o.User.DB))
}

// NoteLSID records the session a command body names in its lsid field v, if it names one,
// as a session of owner when it is new.
func (c *Cache) NoteLSID(v bsoncore.Value, owner Owner) {
	if k, ok := args.LSIDIn(v); ok {
		c.lookup(k, owner, time.Now())
	}
}

// Get returns session k, created if new (as a session without a user), and marks it used
// at now.
func (c *Cache) Get(k [16]byte, now time.Time) *Session {
	return c.lookup(k, Owner{}, now)
}

// lookup returns session k, created for owner if new, and marks it used at now.
func (c *Cache) lookup(k [16]byte, owner Owner, now time.Time) *Session {
	c.mu.RLock()
	s, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		if now.UnixNano()-s.lastUse.Load() >= int64(sessionRefresh) {
			s.lastUse.Store(now.UnixNano())
		}
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[k]; ok {
		s.lastUse.Store(now.UnixNano())
		return s
	}
	if c.m == nil {
		c.m = map[[16]byte]*Session{}
	}
	s = &Session{uid: owner.UID()}
	s.lastUse.Store(now.UnixNano())
	c.m[k] = s
	return s
}

// Checkout returns session k locked for one command (its mu held; unlock it when done),
// marked used at now.
func (c *Cache) Checkout(k [16]byte, now time.Time) *Session {
	for {
		s := c.Get(k, now)
		s.mu.Lock()
		if !s.reaped {
			return s
		}
		s.mu.Unlock() // it expired meanwhile: the next get makes a new one
	}
}

// Alive reports whether session lsid is cached and was used within the timeout of now.
func (c *Cache) Alive(lsid [16]byte, now time.Time) bool {
	c.mu.RLock()
	s, ok := c.m[lsid]
	c.mu.RUnlock()
	return ok && now.UnixNano()-s.lastUse.Load() <= int64(c.timeout)
}

// Listed returns the session ids of an endSessions, killSessions or refreshSessions body:
// its first field, [{id: UUID}, ...].
func Listed(body bsoncore.Document) [][16]byte {
	first, _ := bsonx.FirstElement(body)
	arr, ok := first.Value().ArrayOK()
	if !ok {
		return nil
	}
	var ids [][16]byte
	vals, _ := arr.Values()
	for _, v := range vals {
		if d, ok := v.DocumentOK(); ok {
			if _, id, ok := d.Lookup("id").BinaryOK(); ok && len(id) == 16 {
				ids = append(ids, [16]byte(id))
			}
		}
	}
	return ids
}

// End removes sessions ids from the cache.
func (c *Cache) End(ids [][16]byte) {
	c.mu.Lock()
	for _, id := range ids {
		if s := c.m[id]; s != nil {
			s.txn.Load().Abort() // its transaction goes with it
		}
		delete(c.m, id)
	}
	c.mu.Unlock()
}

// Forget drops every session, as a restart does: what remains is in the store.
func (c *Cache) Forget() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

// Drop drops session lsid from the cache, as its expiry does, without ending anything.
func (c *Cache) Drop(lsid [16]byte) {
	c.mu.Lock()
	delete(c.m, lsid)
	c.mu.Unlock()
}
