package command

import (
	"context"
	"crypto/sha256"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"github.com/google/uuid"
)

// sessionCache is the logical session cache of this process, as mongos keeps one: the
// sessions (lsid) commands arrived with, the user each belongs to, when each was last used,
// and the retryable-write state of each (retryable.go). $listLocalSessions reads it;
// endSessions and killSessions remove from it. A session unused for its timeout expires
// (session_reap.go): its transaction is aborted, its cursors closed and its retryable-write
// records removed from the store.
type sessionCache struct {
	mu sync.RWMutex
	m  map[[16]byte]*session // lsid UUID → session
	// timeout is localLogicalSessionTimeoutMinutes (Options.SessionTimeout).
	timeout time.Duration
}

// session is one logical session's server-side state.
type session struct {
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
	// reaped reports that the session expired and left the cache: checkout then takes the
	// one that replaced it.
	reaped bool
	// txn is the session's latest multi-document transaction (txn.go), nil before one.
	txn atomic.Pointer[txn.Txn]
}

// sessionRefresh is how old a lastUse may get before a command refreshes it, so that the hot
// path mostly only takes the read lock.
const sessionRefresh = time.Second

// DefaultSessionTimeout is localLogicalSessionTimeoutMinutes' default, 30 minutes.
const DefaultSessionTimeout = 30 * time.Minute

// sessionOwner is the user a command runs as, whose digest is the uid of the sessions it
// creates (computed only then); the zero value is no user.
type sessionOwner struct {
	user auth.UserName
	set  bool
}

// uid returns lsid.uid for the owner: SHA-256 of "user@db", as MongoDB computes it, or the
// empty user's digest.
func (o sessionOwner) uid() [32]byte {
	if !o.set {
		return args.EmptyUserDigest
	}
	return sha256.Sum256([]byte(o.user.User + "@" + o.user.DB))
}

// noteLSID records the session a command body names in its lsid field v, if it names one,
// as a session of owner when it is new.
func (c *sessionCache) noteLSID(v bsoncore.Value, owner sessionOwner) {
	if k, ok := args.LSIDIn(v); ok {
		c.lookup(k, owner, time.Now())
	}
}

// Get returns session k, created if new (as a session without a user), and marks it used
// at now.
func (c *sessionCache) Get(k [16]byte, now time.Time) *session {
	return c.lookup(k, sessionOwner{}, now)
}

// lookup returns session k, created for owner if new, and marks it used at now.
func (c *sessionCache) lookup(k [16]byte, owner sessionOwner, now time.Time) *session {
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
		c.m = map[[16]byte]*session{}
	}
	s = &session{uid: owner.uid()}
	s.lastUse.Store(now.UnixNano())
	c.m[k] = s
	return s
}

// checkout returns session k locked for one command (its mu held; unlock it when done),
// marked used at now.
func (c *sessionCache) checkout(k [16]byte, now time.Time) *session {
	for {
		s := c.Get(k, now)
		s.mu.Lock()
		if !s.reaped {
			return s
		}
		s.mu.Unlock() // it expired meanwhile: the next get makes a new one
	}
}

// alive reports whether session lsid is cached and was used within the timeout of now.
func (c *sessionCache) alive(lsid [16]byte, now time.Time) bool {
	c.mu.RLock()
	s, ok := c.m[lsid]
	c.mu.RUnlock()
	return ok && now.UnixNano()-s.lastUse.Load() <= int64(c.timeout)
}

// listed returns the session ids of an endSessions, killSessions or refreshSessions body:
// its first field, [{id: UUID}, ...].
func listed(body bsoncore.Document) [][16]byte {
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

// end removes sessions ids from the cache.
func (c *sessionCache) end(ids [][16]byte) {
	c.mu.Lock()
	for _, id := range ids {
		if s := c.m[id]; s != nil {
			s.txn.Load().Abort() // its transaction goes with it
		}
		delete(c.m, id)
	}
	c.mu.Unlock()
}

// endSessions runs endSessions: the sessions leave the cache (their cursors close when the
// reaper next runs; their retryable-write records stay in the store).
func (e *Server) endSessions(_ context.Context, r *Request) error {
	e.Sessions.end(listed(r.Body))
	return nil
}

// refreshSessions marks the listed sessions used now, so that they do not expire.
func (e *Server) refreshSessions(_ context.Context, r *Request) error {
	now := time.Now()
	for _, id := range listed(r.Body) {
		e.Sessions.Get(id, now).lastUse.Store(now.UnixNano())
	}
	return nil
}

// listLocalSessionsStage is $listLocalSessions: the sessions of the cache, oldest use first.
type ListLocalSessionsStage struct {
	raw bsoncore.Value
	e   *Server
}

// parseListLocalSessionsStage parses {$listLocalSessions: {allUsers?: bool, users?: [...]}}.
// Without authentication every session is the same (empty) user's.
func (e *Server) ParseListLocalSessionsStage(env *agg.Env, _ string, arg bsoncore.Value) (agg.Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$listLocalSessions options must be specified in an object, but found: %s", arg.Type)
	}
	elems, _ := d.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "allUsers", "users", "$_internalPredicate":
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$listLocalSessions.%s' is an unknown field.", el.Key())
		}
	}
	if env.Coll != "" { // any database, as MongoDB 3.6+ allows; never a collection
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$listLocalSessions must be run against the database with {aggregate: 1}, not a collection")
	}
	return &ListLocalSessionsStage{raw: arg, e: e}, nil
}

// Open implements agg.Stage; the stage is a source, so it ignores its input.
func (s *ListLocalSessionsStage) Open(in stream.Stream) (stream.Stream, error) {
	in.Close()
	type entry struct {
		id      [16]byte
		uid     [32]byte
		lastUse time.Time
	}
	c := &s.e.Sessions
	c.mu.RLock()
	entries := make([]entry, 0, len(c.m))
	for id, s := range c.m {
		entries = append(entries, entry{id, s.uid, time.Unix(0, s.lastUse.Load())})
	}
	c.mu.RUnlock()
	sort.Slice(entries, func(i, j int) bool { return entries[i].lastUse.Before(entries[j].lastUse) })
	docs := make([]bsoncore.Document, len(entries))
	for i, se := range entries {
		id := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, se.id[:]).AppendBinary("uid", 0, se.uid[:]).Build()
		docs[i] = bsoncore.NewDocumentBuilder().AppendDocument("_id", id).AppendDateTime("lastUse", se.lastUse.UnixMilli()).Build()
	}
	return &stream.Slice{Docs: docs}, nil
}

// Spec implements agg.Stage.
func (s *ListLocalSessionsStage) Spec() bsoncore.Document {
	return agg.StageSpec("$listLocalSessions", s.raw)
}

// listSessionsStage is $listSessions: on mongos it reads config.system.sessions, where the
// session caches of the cluster's routers persist their sessions; cleave is one process, so
// its cache is the cluster's and the stage lists it, as $listLocalSessions does.
type ListSessionsStage struct{ local *ListLocalSessionsStage }

// parseListSessionsStage parses {$listSessions: {allUsers?, users?}} on config.system.sessions.
func (e *Server) ParseListSessionsStage(env *agg.Env, _ string, arg bsoncore.Value) (agg.Stage, error) {
	if env.DB != "config" || env.Coll != "system.sessions" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$listSessions may only be run against config.system.sessions")
	}
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$listSessions options must be specified in an object, but found: %s", arg.Type)
	}
	elems, _ := d.Elements()
	for _, el := range elems {
		if k := el.Key(); k != "allUsers" && k != "users" {
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$listSessions.%s' is an unknown field.", k)
		}
	}
	return &ListSessionsStage{local: &ListLocalSessionsStage{raw: arg, e: e}}, nil
}

// Open implements agg.Stage; the stage is a source (OpenSource), so it only runs first.
func (s *ListSessionsStage) Open(stream.Stream) (stream.Stream, error) {
	return nil, mongoerr.New(mongoerr.Location40602, "$listSessions is only valid as the first stage in a pipeline")
}

// OpenSource implements agg.SourceStage: the cached sessions, whatever the collection holds.
func (s *ListSessionsStage) OpenSource(*catalog.Coll) (stream.Stream, error) {
	return s.local.Open(stream.Empty{})
}

// Spec implements agg.Stage.
func (s *ListSessionsStage) Spec() bsoncore.Document {
	return agg.StageSpec("$listSessions", s.local.raw)
}

// Collectionless implements agg.Collectionless: $listLocalSessions reads no collection.
func (s *ListLocalSessionsStage) Collectionless() {}

// Forget drops every session, as a restart does: what remains is in the store.
func (c *sessionCache) Forget() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

// Drop drops session lsid from the cache, as its expiry does, without ending anything.
func (c *sessionCache) Drop(lsid [16]byte) {
	c.mu.Lock()
	delete(c.m, lsid)
	c.mu.Unlock()
}

// addSessionCommands registers the session commands.
func (e *Server) addSessionCommands(add func(*Command)) {
	add(&Command{Name: "startSession", Run: e.startSession, Action: auth.ActionNone, Help: "start a logical session"})
	add(&Command{Name: "endSessions", Run: e.endSessions, Action: auth.ActionNone, Help: "end a set of logical sessions", Props: APIV1})
	add(&Command{Name: "killSessions", Run: e.killSessions, Action: auth.ActionAuthenticated, Help: "kill a logical session and its operations"})
	add(&Command{Name: "refreshSessions", Run: e.refreshSessions, Action: auth.ActionNone, Help: "renew a set of logical sessions", Props: APIV1})
	add(&Command{Name: "killAllSessions", Run: e.killAllSessions, Action: auth.ActionClusterAdmin, Help: "kill all logical sessions, for a user, and their operations"})
	add(&Command{Name: "killAllSessionsByPattern", Run: e.killAllSessionsByPattern, Action: auth.ActionClusterAdmin, Help: "kill logical sessions by pattern"})
}

// startSession returns a new logical session id.
func (e *Server) startSession(_ context.Context, r *Request) error {
	id := uuid.New()
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "id")
	out = bsoncore.AppendBinaryElement(out, "id", 4, id[:])
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	out = bsoncore.AppendInt32Element(out, "timeoutMinutes", e.SessionTimeoutMinutes())
	r.Out = out
	return nil
}
