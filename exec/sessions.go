package exec

import (
	"context"
	"crypto/sha256"
	"sort"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// sessionCache is the logical session cache of this process, as mongos keeps one: the
// sessions (lsid) commands arrived with, and when each was last used. $listLocalSessions
// reads it; endSessions and killSessions remove from it. Sessions carry no state yet (no
// transactions, no retryable-write records), so the cache only answers what is in use.
type sessionCache struct {
	m sync.Map // string(lsid UUID bytes) → *sessionEntry
}

// sessionEntry is one cached session.
type sessionEntry struct {
	id      []byte
	lastUse time.Time
}

// sessionRefresh is how old a lastUse may get before a command refreshes it, so that the hot
// path mostly only reads the map.
const sessionRefresh = time.Second

// maxCachedSessions bounds the cache; mongod's limit (maxSessions) is 1,000,000.
const maxCachedSessions = 1_000_000

// note records the session of a command body, if it names one.
func (c *sessionCache) note(body bsoncore.Document) {
	v, err := body.LookupErr("lsid", "id")
	if err != nil || v.Type != bsoncore.TypeBinary {
		return
	}
	_, id, ok := v.BinaryOK()
	if !ok {
		return
	}
	now := time.Now()
	if old, ok := c.m.Load(string(id)); ok {
		if e := old.(*sessionEntry); now.Sub(e.lastUse) < sessionRefresh {
			return
		}
	}
	c.m.Store(string(id), &sessionEntry{id: append([]byte(nil), id...), lastUse: now})
}

// end removes the sessions of an endSessions or killSessions body ([{id: UUID}, ...]).
func (c *sessionCache) end(body bsoncore.Document) {
	first, _ := firstElement(body)
	arr, ok := first.Value().ArrayOK()
	if !ok {
		return
	}
	vals, _ := arr.Values()
	for _, v := range vals {
		if d, ok := v.DocumentOK(); ok {
			if _, id, ok := d.Lookup("id").BinaryOK(); ok {
				c.m.Delete(string(id))
			}
		}
	}
}

// endSessions runs endSessions and killSessions: the sessions leave the cache.
func (e *Executor) endSessions(_ context.Context, r *request) error {
	e.sessions.end(r.body)
	return nil
}

// killAllSessions empties the cache.
func (e *Executor) killAllSessions(_ context.Context, _ *request) error {
	e.sessions.m.Clear()
	return nil
}

// emptyUserDigest is the uid of sessions without an authenticated user: SHA-256 of "".
var emptyUserDigest = sha256.Sum256(nil)

// listLocalSessionsStage is $listLocalSessions: the sessions of the cache, oldest use first.
type listLocalSessionsStage struct {
	raw bsoncore.Value
	e   *Executor
}

// parseListLocalSessionsStage parses {$listLocalSessions: {allUsers?: bool, users?: [...]}}.
// Without authentication every session is the same (empty) user's.
func parseListLocalSessionsStage(env *aggEnv, _ string, arg bsoncore.Value) (aggStage, error) {
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
	if env.db != "admin" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$listLocalSessions must be run against the 'admin' database with {aggregate: 1}")
	}
	return &listLocalSessionsStage{raw: arg, e: env.e}, nil
}

// open implements aggStage; the stage is a source, so it ignores its input.
func (s *listLocalSessionsStage) open(in docStream) (docStream, error) {
	in.close()
	var entries []*sessionEntry
	s.e.sessions.m.Range(func(_, v any) bool {
		entries = append(entries, v.(*sessionEntry))
		return len(entries) < maxCachedSessions
	})
	sort.Slice(entries, func(i, j int) bool { return entries[i].lastUse.Before(entries[j].lastUse) })
	docs := make([]bsoncore.Document, len(entries))
	for i, se := range entries {
		id := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, se.id).AppendBinary("uid", 0, emptyUserDigest[:]).Build()
		docs[i] = bsoncore.NewDocumentBuilder().AppendDocument("_id", id).AppendDateTime("lastUse", se.lastUse.UnixMilli()).Build()
	}
	return &sliceStream{docs: docs}, nil
}

// spec implements aggStage.
func (s *listLocalSessionsStage) spec() bsoncore.Document {
	return stageSpec("$listLocalSessions", s.raw)
}

// listSessionsStage is $listSessions: on mongos it reads config.system.sessions, where the
// session caches of the cluster's routers persist their sessions; cleave is one process, so
// its cache is the cluster's and the stage lists it, as $listLocalSessions does.
type listSessionsStage struct{ local *listLocalSessionsStage }

// parseListSessionsStage parses {$listSessions: {allUsers?, users?}} on config.system.sessions.
func parseListSessionsStage(env *aggEnv, _ string, arg bsoncore.Value) (aggStage, error) {
	if env.db != "config" || env.coll != "system.sessions" {
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
	return &listSessionsStage{local: &listLocalSessionsStage{raw: arg, e: env.e}}, nil
}

// open implements aggStage; the stage is a source (openSource), so it only runs first.
func (s *listSessionsStage) open(docStream) (docStream, error) {
	return nil, mongoerr.New(40602, "$listSessions is only valid as the first stage in a pipeline")
}

// openSource implements sourceStage: the cached sessions, whatever the collection holds.
func (s *listSessionsStage) openSource(*collInfo) (docStream, error) {
	return s.local.open(emptyStream{})
}

// spec implements aggStage.
func (s *listSessionsStage) spec() bsoncore.Document { return stageSpec("$listSessions", s.local.raw) }
