package command

import (
	"context"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"github.com/google/uuid"
)

// endSessions runs endSessions: the sessions leave the cache (their cursors close when the
// reaper next runs; their retryable-write records stay in the store).
func (e *Server) endSessions(_ context.Context, r *Request) error {
	e.Sessions.End(session.Listed(r.Body))
	return nil
}

// refreshSessions marks the listed sessions used now, so that they do not expire.
func (e *Server) refreshSessions(_ context.Context, r *Request) error {
	now := time.Now()
	for _, id := range session.Listed(r.Body) {
		e.Sessions.Touch(id, now)
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
	entries := s.e.Sessions.Entries()
	sort.Slice(entries, func(i, j int) bool { return entries[i].LastUse.Before(entries[j].LastUse) })
	docs := make([]bsoncore.Document, len(entries))
	for i, se := range entries {
		id := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, se.ID[:]).AppendBinary("uid", 0, se.UID[:]).Build()
		docs[i] = bsoncore.NewDocumentBuilder().AppendDocument("_id", id).AppendDateTime("lastUse", se.LastUse.UnixMilli()).Build()
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
	out = bsoncore.AppendInt32Element(out, "timeoutMinutes", e.Sessions.TimeoutMinutes())
	r.Out = out
	return nil
}
