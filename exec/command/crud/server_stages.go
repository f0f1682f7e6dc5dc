package crud

import (
	"sort"

	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// CurrentOpStage is $currentOp: one document per connection running a command (every
// connection with idleConnections: true).
type CurrentOpStage struct {
	raw      bsoncore.Value
	e        *command.Server
	idleConn bool
}

// ParseCurrentOpStage parses {$currentOp: {allUsers?, idleConnections?, idleCursors?,
// idleSessions?, localOps?, truncateOps?, backtrace?}}.
func (h *Handlers) ParseCurrentOpStage(env *agg.Env, _ string, arg bsoncore.Value) (agg.Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$currentOp options must be specified in an object, but found: %s", arg.Type)
	}
	s := &CurrentOpStage{raw: arg, e: h.Server}
	elems, _ := d.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "idleConnections":
			b, ok := el.Value().BooleanOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.FailedToParse, "The 'idleConnections' parameter of the $currentOp stage must be a boolean value, but found: %s", el.Value().Type)
			}
			s.idleConn = b
		case "allUsers", "idleCursors", "idleSessions", "localOps", "truncateOps", "backtrace", "targetAllNodes":
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Unrecognized option '%s' in $currentOp stage.", el.Key())
		}
	}
	if env.DB != "admin" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
	}
	return s, nil
}

// Open implements agg.Stage; the stage is a source, so it ignores its input.
func (s *CurrentOpStage) Open(in stream.Stream) (stream.Stream, error) {
	in.Close()
	return &stream.Slice{Docs: s.e.CurrentOps(s.idleConn)}, nil
}

// Spec implements agg.Stage.
func (s *CurrentOpStage) Spec() bsoncore.Document { return agg.StageSpec("$currentOp", s.raw) }

// Collectionless implements agg.Collectionless: $currentOp reads no collection.
func (s *CurrentOpStage) Collectionless() {}

// ListLocalSessionsStage is $listLocalSessions: the sessions of the cache, oldest use first.
type ListLocalSessionsStage struct {
	raw bsoncore.Value
	e   *command.Server
}

// ParseListLocalSessionsStage parses {$listLocalSessions: {allUsers?: bool, users?: [...]}}.
// Without authentication every session is the same (empty) user's.
func (h *Handlers) ParseListLocalSessionsStage(env *agg.Env, _ string, arg bsoncore.Value) (agg.Stage, error) {
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
	return &ListLocalSessionsStage{raw: arg, e: h.Server}, nil
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

// ListSessionsStage is $listSessions: on mongos it reads config.system.sessions, where the
// session caches of the cluster's routers persist their sessions; cleave is one process, so
// its cache is the cluster's and the stage lists it, as $listLocalSessions does.
type ListSessionsStage struct{ local *ListLocalSessionsStage }

// ParseListSessionsStage parses {$listSessions: {allUsers?, users?}} on config.system.sessions.
func (h *Handlers) ParseListSessionsStage(env *agg.Env, _ string, arg bsoncore.Value) (agg.Stage, error) {
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
	return &ListSessionsStage{local: &ListLocalSessionsStage{raw: arg, e: h.Server}}, nil
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
